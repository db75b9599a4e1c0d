module ccm.test/sdk/triton

go 1.23.0

require github.com/joyent/triton-go/v2 v2.0.0-pre3

require (
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/crypto v0.0.0-20190611184440-5c40567a22f8 // indirect
	golang.org/x/sys v0.0.0-20200501145240-bc7a7d42d5c3 // indirect
)
