# rttlab route contract (see apps/README.md) on Rails 7.2 + Active Record +
# Puma: a one-file API-only application. Only the Active Record and Action
# Controller frameworks are loaded; everything the routes do goes through the
# stock Rails request path (router, API controller, Active Record models).
ENV["RAILS_ENV"] ||= "production"

require "rails"
require "active_record/railtie"
require "action_controller/railtie"

module RttlabRails
  # Errors that Rails turns into responses (unknown route, failed query)
  # answer JSON like every route of the contract.
  JSON_EXCEPTIONS_APP = lambda do |env|
    status = env["PATH_INFO"].to_s.delete_prefix("/").to_i
    status = 500 unless status.between?(400, 599)
    exception = env["action_dispatch.exception"]
    message = Rack::Utils::HTTP_STATUS_CODES.fetch(status, "Error")
    message = "#{message}: #{exception.message}" if exception && status >= 500
    body = JSON.generate({ error: message })
    [status, { "content-type" => "application/json", "content-length" => body.bytesize.to_s }, [body]]
  end

  # Stamps /work responses with the serving process and thread and the
  # request's start and end on the monotonic clock (ns), taken around the
  # whole Rails stack: what the worker-scheduling study needs to tell which
  # requests ran on one worker at once.
  class WorkerStamp
    def initialize(app)
      @app = app
    end

    def call(env)
      # Only the study's route: the contract's routes are the measured
      # request path of the RTT study and stay as they were.
      return @app.call(env) unless env["PATH_INFO"] == "/work"

      start_ns = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
      status, headers, body = @app.call(env)
      headers["x-rttlab-pid"] = Process.pid.to_s
      headers["x-rttlab-thread"] = Thread.current.object_id.to_s
      headers["x-rttlab-start-ns"] = start_ns.to_s
      headers["x-rttlab-end-ns"] = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond).to_s
      [status, headers, body]
    end
  end

  class Application < Rails::Application
    config.load_defaults 7.2
    config.api_only = true

    # Production: classes loaded once at boot, never reloaded.
    config.enable_reloading = false
    config.eager_load = true
    config.consider_all_requests_local = false

    # Logging stays off the hot path: warnings and errors only, no
    # per-request lines (the request logger middleware is removed).
    config.logger = ActiveSupport::Logger.new($stdout)
    config.log_level = :warn
    config.middleware.delete Rails::Rack::Logger
    config.action_dispatch.log_rescued_responses = false
    config.active_record.verbose_query_logs = false
    config.active_record.query_log_tags_enabled = false

    # No credentials file: the key comes from the environment or is made
    # at start (nothing here signs or encrypts data that must outlive it).
    config.secret_key_base = ENV["SECRET_KEY_BASE"].presence || SecureRandom.hex(64)
    config.require_master_key = false

    config.exceptions_app = JSON_EXCEPTIONS_APP
    config.middleware.insert_before 0, WorkerStamp
  end
end

class ApplicationRecord < ActiveRecord::Base
  primary_abstract_class
end

class Account < ApplicationRecord
  has_many :articles
end

class Article < ApplicationRecord
  belongs_to :account
  has_many :feedback, class_name: "Feedback"
end

class Feedback < ApplicationRecord
  self.table_name = "feedback"
  belongs_to :article
end

class FeedController < ActionController::API
  MAX_SERIAL = 1000

  def health
    render json: { status: "ok" }
  end

  # GET /feed: 3 statements; the feedback is counted in one grouped query.
  def feed
    account = reader
    articles = account.articles.select(:id, :title).order(:id).to_a
    counts = Feedback.where(article_id: articles.map(&:id)).group(:article_id).count
    render json: feed_json(account, articles) { |a| counts.fetch(a.id, 0) }
  end

  # GET /feed-naive: 2 statements plus one count per article (the N+1 route).
  def feed_naive
    account = reader
    articles = account.articles.select(:id, :title).order(:id).to_a
    render json: feed_json(account, articles) { |a| a.feedback.count }
  end

  # GET /serial?n=N: N sequential SELECT 1.
  def serial
    n = serial_n
    return if performed?

    ActiveRecord::Base.with_connection do |conn|
      # The query cache (off in config/database.yml, and kept off here should
      # it be turned on) would answer every SELECT 1 after the first without
      # asking the database; the route exists to ask it N times. SELECT 1 is
      # idempotent, so allow_retry spares the connection check (an extra
      # round trip) that Active Record makes before the first non-retryable
      # query after each checkout.
      conn.uncached do
        n.times { conn.select_all("SELECT 1", "Serial", allow_retry: true) }
      end
    end
    render json: { n: n }
  end

  MAX_CPU_MS = 1000

  # GET /work?cpu_ms=X&queries=N (n is accepted for queries, as the route
  # contract's per-N routes send it): X ms of Ruby CPU, holding the GVL,
  # then N serial SELECT 1, releasing it while each waits on the database.
  # The answer names the worker process and thread that served it and the
  # start and end of the work on the monotonic clock (ns, shared by every
  # process of the container); WorkerStamp adds the same for the whole
  # request as headers, so a study can tell which requests shared a worker.
  def work
    start_ns = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
    query = Rack::Utils.parse_query(request.query_string)
    queries = int_param(query, query.key?("queries") ? "queries" : "n", MAX_SERIAL, required: true)
    return if performed?
    cpu_ms = int_param(query, "cpu_ms", MAX_CPU_MS, required: false) || 0
    return if performed?

    burn_cpu(cpu_ms)
    ActiveRecord::Base.with_connection do |conn|
      conn.uncached do
        queries.times { conn.select_all("SELECT 1", "Work", allow_retry: true) }
      end
    end
    end_ns = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
    render json: { n: queries, cpu_ms: cpu_ms, pid: Process.pid, thread: Thread.current.object_id.to_s, start_ns: start_ns, end_ns: end_ns }
  end

  def method_not_allowed
    response.set_header("Allow", "GET, HEAD")
    render json: { error: "method #{request.method} not allowed on #{request.path}" }, status: :method_not_allowed
  end

  def not_found
    render json: { error: "no route #{request.path}" }, status: :not_found
  end

  private

  def reader
    Account.find_by(name: "reader") or
      raise 'account "reader" is missing: is the database seeded?'
  end

  def feed_json(account, articles)
    {
      account: { id: account.id, name: account.name },
      articles: articles.map { |a| { id: a.id, title: a.title, feedback: yield(a) } }
    }
  end

  def serial_n
    # Parsed from the raw query string: Rails' params keep only the last of
    # repeated keys, and the contract refuses repeated n.
    raw = Rack::Utils.parse_query(request.query_string)["n"]
    if raw.nil?
      bad_request("query parameter n is missing (0-#{MAX_SERIAL})")
    elsif raw.is_a?(Array)
      bad_request("query parameter n is given #{raw.length} times")
    elsif !raw.match?(/\A[0-9]+\z/)
      bad_request("n #{raw.to_s.inspect} is not a non-negative integer")
    elsif raw.to_i > MAX_SERIAL
      bad_request("n #{raw} is above #{MAX_SERIAL}")
    else
      raw.to_i
    end
  end

  # Burns ms of this thread's CPU time in Ruby (the GVL stays held).
  def burn_cpu(ms)
    return if ms <= 0
    deadline = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) + ms / 1000.0
    x = 0
    x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) < deadline
    x
  end

  def int_param(query, name, max, required:)
    raw = query[name]
    if raw.nil?
      bad_request("query parameter #{name} is missing (0-#{max})") if required
      nil
    elsif raw.is_a?(Array)
      bad_request("query parameter #{name} is given #{raw.length} times")
    elsif !raw.match?(/\A[0-9]+\z/)
      bad_request("#{name} #{raw.to_s.inspect} is not a non-negative integer")
    elsif raw.to_i > max
      bad_request("#{name} #{raw} is above #{max}")
    else
      raw.to_i
    end
  end

  def bad_request(message)
    render json: { error: message }, status: :bad_request
    nil
  end
end

RttlabRails::Application.initialize!

# Drawn after initialize!: the boot-time route reload would clear routes
# drawn before it (this app has no config/routes.rb).
RttlabRails::Application.routes.draw do
  get "/health", to: "feed#health"
  get "/feed", to: "feed#feed"
  get "/feed-naive", to: "feed#feed_naive"
  get "/serial", to: "feed#serial"
  get "/work", to: "feed#work"
  match "/health", to: "feed#method_not_allowed", via: :all
  match "/feed", to: "feed#method_not_allowed", via: :all
  match "/feed-naive", to: "feed#method_not_allowed", via: :all
  match "/serial", to: "feed#method_not_allowed", via: :all
  match "/work", to: "feed#method_not_allowed", via: :all
  root to: "feed#not_found", via: :all
  match "*path", to: "feed#not_found", via: :all
end

# Open the pooled connection and load the models' columns and primary keys
# before Puma listens, so no request connects or runs schema queries. The
# database may still be starting: connecting is retried for CONNECT_WAIT
# seconds, then boot fails (Puma exits non-zero).
module RttlabRails
  CONNECT_WAIT = 60

  def self.warm_up
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + CONNECT_WAIT
    attempt = 0
    begin
      attempt += 1
      ActiveRecord::Base.with_connection do |conn|
        conn.schema_search_path # part of the prepared-statement cache key
        [Account, Article, Feedback].each do |model|
          model.columns_hash
          model.primary_key
        end
      end
      Rails.logger.warn("rttlab-rails: database reachable after #{attempt} attempt(s)") if attempt > 1
    rescue ActiveRecord::ConnectionNotEstablished => e
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= deadline
        raise ActiveRecord::ConnectionNotEstablished, "database not reachable within #{CONNECT_WAIT} s: #{e.message}"
      end
      if attempt == 1 || (attempt % 10).zero?
        Rails.logger.warn("rttlab-rails: waiting for database (attempt #{attempt}): #{e.message.lines.first&.strip}")
      end
      sleep 0.5
      retry
    end
  end
end

RttlabRails.warm_up
