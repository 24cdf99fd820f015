# Puma in single mode (no worker processes) with one thread: the study drives
# one client at a time, and one thread matches the one pooled database
# connection (database.yml), as in the rails feed app.
threads 1, 1
workers 0
# REDMINE_ROOT: /usr/share/redmine (Debian package), /usr/src/redmine (the
# official image, upstream/Dockerfile).
directory ENV.fetch("REDMINE_ROOT", "/usr/share/redmine")
rackup "/usr/local/share/rttlab/redmine/config.ru"
bind "tcp://0.0.0.0:#{ENV.fetch("PORT", "8080")}"
environment ENV.fetch("RAILS_ENV", "production")
# No access log; keep-alive connections from the load client stay open.
log_requests false
quiet
persistent_timeout 75
# docker stop sends SIGTERM: finish the request in flight and exit 0.
raise_exception_on_sigterm false
