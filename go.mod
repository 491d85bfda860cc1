module github.com/fencecheck/fencecheck

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/containerd/errdefs v1.0.0 // indirect
	github.com/docker/docker v28.5.2+incompatible // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
