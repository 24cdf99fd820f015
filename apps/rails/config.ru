# Rack entry point: Puma loads this file (see config/puma.rb).
require_relative "app"

run RttlabRails::Application
