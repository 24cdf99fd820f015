# One-shot set-up of the Redmine instance, run with `rails runner` at every
# container start after the migrations. Idempotent: a second run changes
# nothing and adds nothing.
#
#   1. Redmine's default data (trackers, statuses, priorities, roles,
#      workflows) through the redmine:load_default_data task, in REDMINE_LANG;
#   2. the REST API switched on, and login required (so a missing or wrong
#      API key answers 401);
#   3. the admin user's API key, written to RTTLAB_API_KEY_FILE
#      (/run/rttlab/redmine-api-key) and printed;
#   4. 12 projects with 30 issues each (360) and 2 notes (journals) per issue,
#      in one transaction, only into an instance that has no projects and no
#      issues yet; an instance with exactly 12 and 360 is left alone, any
#      other count is an error;
#   5. the ready marker that makes /health answer 200.

require "fileutils"
require "rake"
require "securerandom"

PROJECTS = 12
ISSUES_PER_PROJECT = 30
NOTES_PER_ISSUE = 2

def say(msg)
  $stdout.puts("rttlab redmine: #{msg}")
  $stdout.flush
end

# 1. Default data. The rake task reports problems on stdout instead of
# failing, so the result is checked here.
Rails.application.load_tasks
ENV["REDMINE_LANG"] ||= "en"
Rake::Task["redmine:load_default_data"].invoke
if Redmine::DefaultData::Loader.no_data? || IssuePriority.default.nil?
  abort "rttlab redmine: default data is missing after redmine:load_default_data"
end

# 2. REST API on, and every request must authenticate: a missing or wrong
# X-Redmine-API-Key then answers 401 instead of quietly serving the public
# projects to the anonymous user.
Setting.rest_api_enabled = "1" unless Setting.rest_api_enabled?
Setting.login_required = "1" unless Setting.login_required?

# 3. The admin account: the migrations create it with the password "admin"
# and a forced password change; give it a random password once, then keep it.
admin = User.find_by(login: "admin", admin: true) or abort "rttlab redmine: the admin user is missing"
if admin.must_change_passwd?
  pw = SecureRandom.hex(16)
  admin.password = pw
  admin.password_confirmation = pw
  admin.must_change_passwd = false
  admin.save!
end
key = admin.api_key
key_file = ENV.fetch("RTTLAB_API_KEY_FILE", "/run/rttlab/redmine-api-key")
FileUtils.mkdir_p(File.dirname(key_file))
File.write("#{key_file}.tmp", "#{key}\n")
File.rename("#{key_file}.tmp", key_file)
say "admin API key #{key} (also in #{key_file})"

# 4. Projects, issues and journals.
want_projects = PROJECTS
want_issues = PROJECTS * ISSUES_PER_PROJECT
have_projects = Project.count
have_issues = Issue.count
if have_projects == want_projects && have_issues == want_issues
  say "data already present: #{have_projects} projects, #{have_issues} issues, #{Journal.count} journals"
elsif have_projects.zero? && have_issues.zero?
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  tracker = Tracker.sorted.first or abort "rttlab redmine: no tracker"
  priority = IssuePriority.default or abort "rttlab redmine: no default priority"
  User.current = admin
  subject = ->(p, i) { format("Issue %d of project %02d", i, p) }
  description = ->(p, i) { "Issue #{i} of project #{p}. " + ("Steps, expected and actual behaviour. " * 4) }
  Mailer.with_deliveries(false) do
    ActiveRecord::Base.transaction do
      projects = (1..PROJECTS).map do |p|
        Project.create!(
          name: format("Project %02d", p),
          identifier: format("rttlab-%02d", p),
          description: "rttlab study project #{p}: #{ISSUES_PER_PROJECT} issues with #{NOTES_PER_ISSUE} notes each.",
          is_public: true
        )
      end

      # The first issue goes through Active Record with every callback
      # (defaults such as status and start date, nested-set columns, the
      # author as watcher); notification mail is off (notify = false). The
      # other 359 copy its column values in one multi-row INSERT, which
      # writes the rows 359 saves would write, then get the same nested-set
      # root (themselves) and the same watcher.
      first = Issue.new(project: projects.first, tracker: tracker, author: admin, priority: priority,
                        subject: subject.call(1, 1), description: description.call(1, 1))
      first.notify = false
      first.save!
      first.reload
      base = first.attributes.except("id", "project_id", "subject", "description", "root_id")
      rows = []
      projects.each_with_index do |project, pi|
        (1..ISSUES_PER_PROJECT).each do |i|
          next if pi.zero? && i == 1

          rows << base.merge("project_id" => project.id, "root_id" => nil,
                             "subject" => subject.call(pi + 1, i), "description" => description.call(pi + 1, i))
        end
      end
      Issue.insert_all!(rows, record_timestamps: false)
      Issue.where(root_id: nil).update_all("root_id = id")

      # Issue#add_auto_watcher runs after the commit, so the first issue
      # gets its watcher (the author, if the author's preferences say so)
      # then; the others get the same one here.
      if admin.pref.auto_watch_on?("issue_created")
        watchers = Issue.where.not(id: first.id).order(:id).pluck(:id).map do |id|
          { watchable_type: "Issue", watchable_id: id, user_id: admin.id }
        end
        Watcher.insert_all!(watchers)
      end

      # Notes-only journals have no details; their callbacks only send mail,
      # add watchers and split private notes. One INSERT writes them all.
      now = Time.now
      journals = Issue.order(:id).pluck(:id).flat_map do |id|
        (1..NOTES_PER_ISSUE).map do |n|
          { journalized_id: id, journalized_type: "Issue", user_id: admin.id,
            notes: "Note #{n} on issue #{id}: checked and updated.",
            private_notes: false, created_on: now + n, updated_on: now + n }
        end
      end
      Journal.insert_all!(journals)

      got_p = Project.count
      got_i = Issue.count
      if got_p != want_projects || got_i != want_issues
        raise "seeded #{got_p} projects and #{got_i} issues, want #{want_projects} and #{want_issues}"
      end
    end
  end
  secs = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  say format("seeded %d projects, %d issues, %d journals in %.1fs",
             Project.count, Issue.count, Journal.count, secs)
else
  abort "rttlab redmine: the database holds #{have_projects} projects and #{have_issues} issues; " \
        "set-up expects none (fresh) or exactly #{want_projects} and #{want_issues} (already seeded)"
end

# 5. Ready.
ready = ENV.fetch("RTTLAB_READY_FILE", "/run/rttlab/redmine-ready")
FileUtils.touch(ready)
