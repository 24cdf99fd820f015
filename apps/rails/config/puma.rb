# Puma in single mode (no worker processes) with one thread: the study
# drives one client at a time, and one thread matches the one pooled
# database connection.
threads 1, 1
workers 0
bind "tcp://0.0.0.0:#{ENV.fetch("PORT", "8080")}"
environment ENV.fetch("RAILS_ENV", "production")
rackup File.expand_path("../config.ru", __dir__)
# No access log; keep-alive connections from the load client stay open.
log_requests false
persistent_timeout 75
# docker stop sends SIGTERM: stop gracefully and exit 0 rather than
# re-raising the signal.
raise_exception_on_sigterm false
