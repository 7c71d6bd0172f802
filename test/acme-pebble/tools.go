//go:build tools

// Pins Pebble, the ACME test server (github.com/letsencrypt/pebble), for test/acme-dns01.test.ts, which
// builds its cmd/pebble with `go build github.com/letsencrypt/pebble/v2/cmd/pebble` in this module.
package tools

import _ "github.com/letsencrypt/pebble/v2/cmd/pebble"
