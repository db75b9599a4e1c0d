module ccm.test/sdk/brightbox

go 1.23.0

require github.com/brightbox/gobrightbox/v2 v2.2.2

require (
	github.com/golang/protobuf v1.5.4 // indirect
	golang.org/x/oauth2 v0.18.0 // indirect
	google.golang.org/appengine v1.6.8 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
)
