// A program of ours on gophercloud, OpenStack's Go SDK (pinned in go.mod; the official controller is
// built on it), that test/integration/sdk-openstack.test.ts runs against ccm's OpenStack simulator: if
// gophercloud cannot work with the simulator, the simulator is not the OpenStack gophercloud was
// written for. Only gophercloud's public API is used.
//
// Environment: SIM_URL (the simulator), SIM_REGION, SIM_USER, SIM_PASSWORD, SIM_DOMAIN_ID,
// SIM_PROJECT_ID, SIM_APP_CRED_ID, SIM_APP_CRED_NAME, SIM_APP_CRED_SECRET, SIM_SERVERS (how many
// servers the simulator holds), SIM_SERVER_ID (one of them), SIM_FLAVOR (its flavor's name),
// SIM_SUBNET_ID (a VIP subnet).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	lbversions "github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/apiversions"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	netversions "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/apiversions"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func main() {
	ctx, cancel := deadline()
	defer cancel()
	url := os.Getenv("SIM_URL")
	endpoint := gophercloud.EndpointOpts{Region: os.Getenv("SIM_REGION")}

	// Password, with an auth URL without a version: gophercloud reads Keystone's version document.
	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: url + "/identity/",
		Username:         os.Getenv("SIM_USER"),
		Password:         os.Getenv("SIM_PASSWORD"),
		DomainID:         os.Getenv("SIM_DOMAIN_ID"),
		TenantID:         os.Getenv("SIM_PROJECT_ID"),
	})
	check("keystone: password, auth URL without a version (version discovery)", err)
	check("keystone: application credential by id", appCredential(ctx, gophercloud.AuthOptions{
		IdentityEndpoint:            url + "/identity/v3",
		ApplicationCredentialID:     os.Getenv("SIM_APP_CRED_ID"),
		ApplicationCredentialSecret: os.Getenv("SIM_APP_CRED_SECRET"),
	}))
	check("keystone: application credential by name, its user by name and domain", appCredential(ctx, gophercloud.AuthOptions{
		IdentityEndpoint:            url + "/identity/v3",
		ApplicationCredentialName:   os.Getenv("SIM_APP_CRED_NAME"),
		ApplicationCredentialSecret: os.Getenv("SIM_APP_CRED_SECRET"),
		Username:                    os.Getenv("SIM_USER"),
		DomainID:                    os.Getenv("SIM_DOMAIN_ID"),
	}))
	if provider == nil {
		os.Exit(1)
	}
	compute, err := openstack.NewComputeV2(provider, endpoint)
	if err != nil {
		check("compute endpoint", err)
		os.Exit(1)
	}
	network, err := openstack.NewNetworkV2(provider, endpoint)
	if err != nil {
		check("network endpoint", err)
		os.Exit(1)
	}
	lb, err := openstack.NewLoadBalancerV2(provider, endpoint)
	if err != nil {
		check("load-balancer endpoint", err)
		os.Exit(1)
	}
	want, _ := strconv.Atoi(os.Getenv("SIM_SERVERS"))

	check("versions: Neutron and Octavia", versions(ctx, network, lb))
	check("list servers, two a page", listServers(ctx, compute, want))
	check("get server, and its flavor by the id Nova 2.1 shows", getServer(ctx, compute))
	check("get a missing server: gophercloud's 404", missingServer(ctx, compute))
	check("load balancer: create, wait, update, update its listener, delete", loadBalancer(ctx, lb))
	exitIfFailed()
}

func appCredential(ctx context.Context, opts gophercloud.AuthOptions) error {
	provider, err := openstack.AuthenticatedClient(ctx, opts)
	if err != nil {
		return err
	}
	if provider.Token() == "" {
		return errors.New("no token")
	}
	return nil
}

func versions(ctx context.Context, network, lb *gophercloud.ServiceClient) error {
	pages, err := netversions.ListVersions(network).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("neutron: %w", err)
	}
	nv, err := netversions.ExtractAPIVersions(pages)
	if err != nil {
		return fmt.Errorf("neutron: %w", err)
	}
	if len(nv) != 1 || nv[0].ID != "v2.0" || nv[0].Status != "CURRENT" {
		return fmt.Errorf("neutron: versions %+v", nv)
	}
	pages, err = lbversions.List(lb).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("octavia: %w", err)
	}
	ov, err := lbversions.ExtractAPIVersions(pages)
	if err != nil {
		return fmt.Errorf("octavia: %w", err)
	}
	if len(ov) == 0 || ov[0].ID != "v2.0" || ov[len(ov)-1].Status != "CURRENT" {
		return fmt.Errorf("octavia: versions %+v", ov)
	}
	return nil
}

func listServers(ctx context.Context, compute *gophercloud.ServiceClient, want int) error {
	seen := map[string]bool{}
	pages := 0
	err := servers.List(compute, servers.ListOpts{Limit: 2}).EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		pages++
		list, err := servers.ExtractServers(page)
		if err != nil {
			return false, err
		}
		for _, s := range list {
			if seen[s.ID] {
				return false, fmt.Errorf("server %s on two pages", s.ID)
			}
			seen[s.ID] = true
		}
		return pages <= want, nil
	})
	if err != nil {
		return err
	}
	if len(seen) != want {
		return fmt.Errorf("listed %d servers, not %d", len(seen), want)
	}
	if wantPages := (want + 1) / 2; pages < wantPages {
		return fmt.Errorf("%d pages, not at least %d", pages, wantPages)
	}
	return nil
}

func getServer(ctx context.Context, compute *gophercloud.ServiceClient) error {
	s, err := servers.Get(ctx, compute, os.Getenv("SIM_SERVER_ID")).Extract()
	if err != nil {
		return err
	}
	if s.ID != os.Getenv("SIM_SERVER_ID") || s.Status == "" || len(s.Addresses) == 0 {
		return fmt.Errorf("server %+v", s)
	}
	id, ok := s.Flavor["id"].(string)
	if !ok {
		return fmt.Errorf("flavor without an id: %v", s.Flavor)
	}
	f, err := flavors.Get(ctx, compute, id).Extract()
	if err != nil {
		return fmt.Errorf("flavor %s: %w", id, err)
	}
	if f.Name != os.Getenv("SIM_FLAVOR") {
		return fmt.Errorf("flavor %s is named %q, not %q", id, f.Name, os.Getenv("SIM_FLAVOR"))
	}
	return nil
}

func missingServer(ctx context.Context, compute *gophercloud.ServiceClient) error {
	_, err := servers.Get(ctx, compute, "0b3e6d8a-0000-4000-8000-000000000000").Extract()
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) || !errors.As(err, &unexpected) {
		return fmt.Errorf("not gophercloud's 404: %v", err)
	}
	return nil
}

func loadBalancer(ctx context.Context, c *gophercloud.ServiceClient) error {
	created, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{
		Name:        "sdk",
		VipSubnetID: os.Getenv("SIM_SUBNET_ID"),
		Tags:        []string{"sdk"},
		Listeners: []listeners.CreateOpts{{
			Name:         "sdk-tcp-80",
			Protocol:     listeners.ProtocolTCP,
			ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{
				Name:     "sdk-tcp-80",
				Protocol: pools.ProtocolTCP,
				LBMethod: pools.LBMethodRoundRobin,
				Members:  []pools.CreateMemberOpts{{Address: "10.0.0.11", ProtocolPort: 30080}},
			},
		}},
	}).Extract()
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := waitActive(ctx, c, created.ID); err != nil {
		return fmt.Errorf("after create: %w", err)
	}
	name := "sdk-renamed"
	updated, err := loadbalancers.Update(ctx, c, created.ID, loadbalancers.UpdateOpts{Name: &name}).Extract()
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if updated.Name != name {
		return fmt.Errorf("update: name %q", updated.Name)
	}
	if err := waitActive(ctx, c, created.ID); err != nil {
		return fmt.Errorf("after update: %w", err)
	}
	if len(created.Listeners) != 1 {
		return fmt.Errorf("create: listeners %+v", created.Listeners)
	}
	limit := 100
	listener, err := listeners.Update(ctx, c, created.Listeners[0].ID, listeners.UpdateOpts{ConnLimit: &limit}).Extract()
	if err != nil {
		return fmt.Errorf("listener update: %w", err)
	}
	if listener.ConnLimit != limit {
		return fmt.Errorf("listener update: connection_limit %d", listener.ConnLimit)
	}
	if err := waitActive(ctx, c, created.ID); err != nil {
		return fmt.Errorf("after the listener update: %w", err)
	}
	if err := loadbalancers.Delete(ctx, c, created.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	for i := 0; i < 50; i++ {
		_, err := loadbalancers.Get(ctx, c, created.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after delete: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("still there after delete")
}

func waitActive(ctx context.Context, c *gophercloud.ServiceClient, id string) error {
	for i := 0; i < 50; i++ {
		got, err := loadbalancers.Get(ctx, c, id).Extract()
		if err != nil {
			return err
		}
		switch got.ProvisioningStatus {
		case "ACTIVE":
			return nil
		case "ERROR":
			return fmt.Errorf("load balancer %s is ERROR", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("load balancer %s is not ACTIVE", id)
}
