module ccm.test/sdk/digitalocean

go 1.23.0

require github.com/digitalocean/godo v1.236.0

require (
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.7 // indirect
	golang.org/x/oauth2 v0.27.0 // indirect
	golang.org/x/time v0.6.0 // indirect
)
