// Package compose holds the compose files that declare rttlab's stacks
// (services, build contexts, networks, x-rttlab metadata). The binary
// embeds them; a user can also run them with `docker compose -f`.
package compose

import "embed"

// Files holds every stack file.
//
//go:embed *.yaml
var Files embed.FS
