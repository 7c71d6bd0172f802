//go:build tools

// Pins Go programs of other modules that tests build from this module (see test/support/go-programs.ts):
// Pebble, the ACME test server (github.com/letsencrypt/pebble), for test/acme-dns01.test.ts.
package tools

import _ "github.com/letsencrypt/pebble/v2/cmd/pebble"
