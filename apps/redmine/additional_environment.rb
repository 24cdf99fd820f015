# rttlab settings for Redmine, read by config/application.rb after Redmine's
# own. Logs go to the container's stdout at warn (no per-request lines, no SQL
# lines); migrations write no schema file into the read-only code tree; the
# instance sends no mail.
config.log_level = :warn
config.logger = ActiveSupport::TaggedLogging.new(ActiveSupport::Logger.new($stdout))
config.active_record.dump_schema_after_migration = false
config.action_mailer.perform_deliveries = false
