module zonekeeper.test/acme-pebble

go 1.25.0

require github.com/letsencrypt/pebble/v2 v2.10.1
