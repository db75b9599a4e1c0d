module ccm.test/sdk/openstack

go 1.25.0

require github.com/gophercloud/gophercloud/v2 v2.15.0
