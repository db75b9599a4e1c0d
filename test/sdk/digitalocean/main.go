// A program of ours on godo, DigitalOcean's official Go SDK (pinned in go.mod), that
// test/integration/sdk-digitalocean.test.ts runs against ccm's DigitalOcean simulator: if the SDK
// cannot work with the simulator, the simulator is not the API the SDK was written for. Only godo's
// public API is used. Environment: SIM_URL, SIM_TOKEN, SIM_DROPLETS (how many droplets the simulator
// holds), SIM_DROPLET_ID (one of them).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"
)

func main() {
	ctx, cancel := deadline()
	defer cancel()
	client := godo.NewFromToken(os.Getenv("SIM_TOKEN"))
	base, err := url.Parse(os.Getenv("SIM_URL") + "/")
	if err != nil {
		fmt.Println("FAIL SIM_URL:", err)
		os.Exit(2)
	}
	client.BaseURL = base
	want, _ := strconv.Atoi(os.Getenv("SIM_DROPLETS"))
	dropletID, _ := strconv.Atoi(os.Getenv("SIM_DROPLET_ID"))

	check("list droplets, two a page", listDroplets(ctx, client, want))
	check("get droplet", getDroplet(ctx, client, dropletID))
	check("get a missing droplet: godo's 404 ErrorResponse", missingDroplet(ctx, client))
	check("load balancer: create, wait, update, delete", loadBalancer(ctx, client, dropletID))
	exitIfFailed()
}

func listDroplets(ctx context.Context, client *godo.Client, want int) error {
	seen := map[int]bool{}
	opt := &godo.ListOptions{Page: 1, PerPage: 2}
	for pages := 0; ; pages++ {
		if pages > want {
			return fmt.Errorf("more pages than droplets")
		}
		droplets, resp, err := client.Droplets.List(ctx, opt)
		if err != nil {
			return err
		}
		for _, d := range droplets {
			if seen[d.ID] {
				return fmt.Errorf("droplet %d on two pages", d.ID)
			}
			seen[d.ID] = true
		}
		if resp.Meta == nil || resp.Meta.Total != want {
			return fmt.Errorf("meta.total is not %d: %+v", want, resp.Meta)
		}
		if resp.Links == nil || resp.Links.IsLastPage() {
			break
		}
		page, err := resp.Links.CurrentPage()
		if err != nil {
			return fmt.Errorf("links: %w", err)
		}
		opt.Page = page + 1
	}
	if len(seen) != want {
		return fmt.Errorf("listed %d droplets, want %d", len(seen), want)
	}
	return nil
}

func getDroplet(ctx context.Context, client *godo.Client, id int) error {
	d, _, err := client.Droplets.Get(ctx, id)
	if err != nil {
		return err
	}
	if d.ID != id || d.Name == "" || d.Region == nil || d.Region.Slug == "" {
		return fmt.Errorf("droplet %d read as %+v", id, d)
	}
	if _, err := d.PrivateIPv4(); err != nil {
		return err
	}
	return nil
}

func missingDroplet(ctx context.Context, client *godo.Client) error {
	_, _, err := client.Droplets.Get(ctx, 987654321)
	var answer *godo.ErrorResponse
	if !errors.As(err, &answer) || answer.Response == nil || answer.Response.StatusCode != http.StatusNotFound {
		return fmt.Errorf("want godo's 404 ErrorResponse, got %v", err)
	}
	return nil
}

// busy tells the API's refusal of a change while a load balancer applies the previous one.
func busy(err error) bool {
	var answer *godo.ErrorResponse
	return errors.As(err, &answer) && answer.Response != nil &&
		answer.Response.StatusCode == http.StatusForbidden && strings.Contains(answer.Message, "previous actions")
}

func loadBalancer(ctx context.Context, client *godo.Client, dropletID int) error {
	request := func(port int) *godo.LoadBalancerRequest {
		return &godo.LoadBalancerRequest{
			Name:   "sdk-lb",
			Region: "nyc3",
			ForwardingRules: []godo.ForwardingRule{
				{EntryProtocol: "tcp", EntryPort: port, TargetProtocol: "tcp", TargetPort: 30080},
			},
			HealthCheck: &godo.HealthCheck{
				Protocol: "tcp", Port: 30080, CheckIntervalSeconds: 3, ResponseTimeoutSeconds: 5,
				HealthyThreshold: 5, UnhealthyThreshold: 3,
			},
			DropletIDs: []int{dropletID},
			Tags:       []string{"k8s:sdk"},
		}
	}
	lb, _, err := client.LoadBalancers.Create(ctx, request(80))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	for tries := 0; lb.Status != "active"; tries++ {
		if tries > 100 {
			return fmt.Errorf("still %q after %d reads", lb.Status, tries)
		}
		time.Sleep(50 * time.Millisecond)
		if lb, _, err = client.LoadBalancers.Get(ctx, lb.ID); err != nil {
			return fmt.Errorf("get: %w", err)
		}
	}
	update := request(81)
	update.Tags = []string{"k8s:other"}
	var updated *godo.LoadBalancer
	for tries := 0; ; tries++ {
		updated, _, err = client.LoadBalancers.Update(ctx, lb.ID, update)
		if err == nil || !busy(err) || tries > 100 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if updated.ForwardingRules[0].EntryPort != 81 {
		return fmt.Errorf("update: entry port %d", updated.ForwardingRules[0].EntryPort)
	}
	if len(updated.Tags) != 1 || updated.Tags[0] != "k8s:sdk" {
		return fmt.Errorf("update: tags %v, want the ones given at creation", updated.Tags)
	}
	all, _, err := client.LoadBalancers.List(ctx, &godo.ListOptions{PerPage: 200})
	if err != nil || len(all) != 1 {
		return fmt.Errorf("list: %d load balancers, %v", len(all), err)
	}
	if _, err := client.LoadBalancers.Delete(ctx, lb.ID); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, _, err := client.LoadBalancers.Get(ctx, lb.ID); err == nil {
		return fmt.Errorf("still there after delete")
	}
	return nil
}
