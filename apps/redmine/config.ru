# Redmine behind one extra path: GET /health answers 200 once this start's
# set-up (entrypoint.sh, setup.rb) wrote its marker, 503 before; it touches
# neither Rails nor the database. Every other request goes to Redmine as is.
require File.join(ENV.fetch("REDMINE_ROOT", "/usr/share/redmine"), "config/environment")

redmine = Rails.application
ready = ENV.fetch("RTTLAB_READY_FILE", "/run/rttlab/redmine-ready")
text = { "content-type" => "text/plain" }

run(lambda do |env|
  next redmine.call(env) unless env["PATH_INFO"] == "/health"

  if File.exist?(ready)
    [200, text, ["ok\n"]]
  else
    [503, text, ["redmine set-up has not finished\n"]]
  end
end)
