module github.com/fencecheck/fencecheck/examples/clients/nats-kv

go 1.26.8

replace github.com/fencecheck/fencecheck => ../../..

require (
	github.com/fencecheck/fencecheck v0.0.0-00010101000000-000000000000
	github.com/nats-io/nats.go v1.56.0
)

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
