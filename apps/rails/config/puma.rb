# Puma for the route contract: single mode with one thread by default (the
# study drives one client at a time, and one thread matches the one pooled
# database connection). The worker-scheduling study sets, per container:
#   PUMA_WORKERS   worker processes (0: single mode)
#   PUMA_THREADS   threads per process (the connection pool follows it)
#   PUMA_WFLBW     wait_for_less_busy_worker in seconds, or "default" to
#                  leave Puma's own setting (cluster mode only)
#   PUMA_WORKER_BOOT_TIMEOUT  seconds a worker may take to boot before
#                  Puma kills it (unset: Puma's own, its worker_timeout);
#                  set longer where the app runs under emulation
workers_n = Integer(ENV.fetch("PUMA_WORKERS", "0"))
threads_n = Integer(ENV.fetch("PUMA_THREADS", "1"))
threads threads_n, threads_n
workers workers_n
if workers_n > 0
  # Every worker boots the app itself (and opens its own connection)
  # rather than inheriting a forked one.
  preload_app! false
  wflbw = ENV.fetch("PUMA_WFLBW", "default")
  wait_for_less_busy_worker Float(wflbw) unless wflbw == "default"
  boot = ENV["PUMA_WORKER_BOOT_TIMEOUT"]
  worker_boot_timeout Integer(boot) if boot && !boot.empty?
end
bind "tcp://0.0.0.0:#{ENV.fetch("PORT", "8080")}"
environment ENV.fetch("RAILS_ENV", "production")
rackup File.expand_path("../config.ru", __dir__)
# No access log; keep-alive connections from the load client stay open.
log_requests false
persistent_timeout 75
# docker stop sends SIGTERM: stop gracefully and exit 0 rather than
# re-raising the signal.
raise_exception_on_sigterm false
