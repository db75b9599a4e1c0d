// A program of ours on gobrightbox, Brightbox's official Go SDK (pinned in go.mod), that
// test/integration/sdk-brightbox.test.ts runs against ccm's Brightbox simulator: if the SDK cannot
// work with the simulator, the simulator is not the API the SDK was written for. Only gobrightbox's
// public API is used, with unknown JSON fields refused as its own tests do. Environment: SIM_URL,
// SIM_CLIENT, SIM_SECRET, SIM_SERVERS (how many servers the simulator holds), SIM_SERVER_ID and
// SIM_SERVER_ID2 (two of them).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	brightbox "github.com/brightbox/gobrightbox/v2"
	"github.com/brightbox/gobrightbox/v2/clientcredentials"
	"github.com/brightbox/gobrightbox/v2/endpoint"
	"github.com/brightbox/gobrightbox/v2/enums/balancingpolicy"
	"github.com/brightbox/gobrightbox/v2/enums/healthchecktype"
	"github.com/brightbox/gobrightbox/v2/enums/listenerprotocol"
	"github.com/brightbox/gobrightbox/v2/enums/loadbalancerstatus"
	"github.com/brightbox/gobrightbox/v2/enums/proxyprotocol"
)

func main() {
	ctx, cancel := deadline()
	defer cancel()
	conf := &clientcredentials.Config{
		ID:     os.Getenv("SIM_CLIENT"),
		Secret: os.Getenv("SIM_SECRET"),
		Config: endpoint.Config{BaseURL: os.Getenv("SIM_URL") + "/", Scopes: endpoint.InfrastructureScope},
	}
	client, err := brightbox.Connect(ctx, conf)
	if err != nil {
		fmt.Println("FAIL connect:", err)
		os.Exit(2)
	}
	client.DisallowUnknownFields()
	want, _ := strconv.Atoi(os.Getenv("SIM_SERVERS"))
	first, second := os.Getenv("SIM_SERVER_ID"), os.Getenv("SIM_SERVER_ID2")

	check("list servers", listServers(ctx, client, want))
	check("get server", getServer(ctx, client, first))
	check("get a missing server: gobrightbox's 404 APIError", missingServer(ctx, client))
	check("server group: create, add and remove servers", serverGroup(ctx, client, first, second))
	check("firewall policy and rule: create, update, remove, apply_to, delete", firewall(ctx, client))
	check("load balancer: create, wait, update, nodes, listeners, lock, delete", loadBalancer(ctx, client, first, second))
	exitIfFailed()
}

func listServers(ctx context.Context, client *brightbox.Client, want int) error {
	servers, err := client.Servers(ctx)
	if err != nil {
		return err
	}
	if len(servers) != want {
		return fmt.Errorf("%d servers, want %d", len(servers), want)
	}
	for _, s := range servers {
		if s.Zone == nil || s.Zone.Handle == "" || s.ServerType == nil || s.ServerType.Handle == "" {
			return fmt.Errorf("server %s without zone or server type handle", s.ID)
		}
	}
	return nil
}

func getServer(ctx context.Context, client *brightbox.Client, id string) error {
	server, err := client.Server(ctx, id)
	if err != nil {
		return err
	}
	if server.ID != id || len(server.Interfaces) == 0 || server.Interfaces[0].IPv4Address == "" {
		return fmt.Errorf("server %s: id %q, interfaces %+v", id, server.ID, server.Interfaces)
	}
	return nil
}

func missingServer(ctx context.Context, client *brightbox.Client) error {
	_, err := client.Server(ctx, "srv-zzzzz")
	var apiErr *brightbox.APIError
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("want an APIError, got %v", err)
	}
	if apiErr.StatusCode != 404 || apiErr.ErrorName == "" || len(apiErr.Errors) == 0 || apiErr.ParseError != nil {
		return fmt.Errorf("want a parsed 404 with error_name and errors, got %+v", apiErr)
	}
	return nil
}

func serverGroup(ctx context.Context, client *brightbox.Client, first, second string) error {
	name := "sdk group"
	group, err := client.CreateServerGroup(ctx, brightbox.ServerGroupOptions{Name: &name})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	members := brightbox.ServerGroupMemberList{Servers: []brightbox.ServerGroupMember{{Server: first}, {Server: second}}}
	if group, err = client.AddServersToServerGroup(ctx, group.ID, members); err != nil {
		return fmt.Errorf("add_servers: %w", err)
	}
	if len(group.Servers) != 2 {
		return fmt.Errorf("add_servers answered %d servers", len(group.Servers))
	}
	if group, err = client.RemoveServersFromServerGroup(ctx, group.ID, members); err != nil {
		return fmt.Errorf("remove_servers: %w", err)
	}
	if len(group.Servers) != 0 {
		return fmt.Errorf("remove_servers answered %d servers", len(group.Servers))
	}
	gone, err := client.DestroyServerGroup(ctx, group.ID)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if gone.ID != group.ID {
		return fmt.Errorf("delete answered %q", gone.ID)
	}
	return nil
}

func firewall(ctx context.Context, client *brightbox.Client) error {
	names := []string{"sdk one", "sdk two"}
	groups := make([]*brightbox.ServerGroup, 2)
	for i := range groups {
		group, err := client.CreateServerGroup(ctx, brightbox.ServerGroupOptions{Name: &names[i]})
		if err != nil {
			return fmt.Errorf("create group: %w", err)
		}
		groups[i] = group
	}
	policy, err := client.CreateFirewallPolicy(ctx, brightbox.FirewallPolicyOptions{
		Name:                     &names[0],
		FirewallPolicyAttachment: &brightbox.FirewallPolicyAttachment{ServerGroup: groups[0].ID},
	})
	if err != nil {
		return fmt.Errorf("create policy: %w", err)
	}
	protocol, source, ports, description := "tcp", "10.0.0.0/8", "30080", "sdk rule"
	rule, err := client.CreateFirewallRule(ctx, brightbox.FirewallRuleOptions{
		FirewallPolicy:  policy.ID,
		Protocol:        &protocol,
		Source:          &source,
		DestinationPort: &ports,
		Description:     &description,
	})
	if err != nil {
		return fmt.Errorf("create rule: %w", err)
	}
	ports = "30080,30443"
	if rule, err = client.UpdateFirewallRule(ctx, brightbox.FirewallRuleOptions{ID: rule.ID, DestinationPort: &ports}); err != nil {
		return fmt.Errorf("update rule: %w", err)
	}
	if rule.DestinationPort != ports || rule.Source != source {
		return fmt.Errorf("update rule answered %+v", rule)
	}
	if policy, err = client.RemoveFirewallPolicy(ctx, policy.ID, brightbox.FirewallPolicyAttachment{ServerGroup: groups[0].ID}); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	if policy.ServerGroup != nil {
		return fmt.Errorf("remove left it on %s", policy.ServerGroup.ID)
	}
	if policy, err = client.ApplyFirewallPolicy(ctx, policy.ID, brightbox.FirewallPolicyAttachment{ServerGroup: groups[1].ID}); err != nil {
		return fmt.Errorf("apply_to: %w", err)
	}
	if policy.ServerGroup == nil || policy.ServerGroup.ID != groups[1].ID || len(policy.Rules) != 1 {
		return fmt.Errorf("apply_to answered %+v", policy)
	}
	if gone, err := client.DestroyFirewallRule(ctx, rule.ID); err != nil || gone.ID != rule.ID {
		return fmt.Errorf("delete rule: %v", err)
	}
	if _, err := client.RemoveFirewallPolicy(ctx, policy.ID, brightbox.FirewallPolicyAttachment{ServerGroup: groups[1].ID}); err != nil {
		return fmt.Errorf("remove before delete: %w", err)
	}
	if gone, err := client.DestroyFirewallPolicy(ctx, policy.ID); err != nil || gone.ID != policy.ID {
		return fmt.Errorf("delete policy: %v", err)
	}
	for _, group := range groups {
		if _, err := client.DestroyServerGroup(ctx, group.ID); err != nil {
			return fmt.Errorf("delete group: %w", err)
		}
	}
	return nil
}

// waitFor polls a load balancer until ready says so; a missing one is nil.
func waitFor(ctx context.Context, client *brightbox.Client, id string, ready func(*brightbox.LoadBalancer) bool) (*brightbox.LoadBalancer, error) {
	for {
		lb, err := client.LoadBalancer(ctx, id)
		var apiErr *brightbox.APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == 404 {
			lb, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		if ready(lb) {
			return lb, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func loadBalancer(ctx context.Context, client *brightbox.Client, first, second string) error {
	name := "sdk balancer"
	cipName := "sdk address"
	cip, err := client.CreateCloudIP(ctx, brightbox.CloudIPOptions{Name: &cipName})
	if err != nil {
		return fmt.Errorf("allocate cloud IP: %w", err)
	}
	lb, err := client.CreateLoadBalancer(ctx, brightbox.LoadBalancerOptions{
		Name:        &name,
		Nodes:       []brightbox.LoadBalancerNode{{Node: first}},
		Policy:      balancingpolicy.LeastConnections,
		Listeners:   []brightbox.LoadBalancerListener{{Protocol: listenerprotocol.Http, In: 80, Out: 30080, Timeout: 50000}},
		Healthcheck: &brightbox.LoadBalancerHealthcheck{Type: healthchecktype.Http, Port: 30080, Request: "/healthz"},
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if lb, err = waitFor(ctx, client, lb.ID, func(l *brightbox.LoadBalancer) bool {
		return l != nil && l.Status == loadbalancerstatus.Active
	}); err != nil {
		return err
	}
	if _, err := client.MapCloudIP(ctx, cip.ID, brightbox.CloudIPAttachment{Destination: lb.ID}); err != nil {
		return fmt.Errorf("map: %w", err)
	}
	policy := balancingpolicy.RoundRobin
	if lb, err = client.UpdateLoadBalancer(ctx, brightbox.LoadBalancerOptions{
		ID:        lb.ID,
		Policy:    policy,
		Listeners: []brightbox.LoadBalancerListener{{Protocol: listenerprotocol.Tcp, In: 80, Out: 30080, Timeout: 60000, ProxyProtocol: proxyprotocol.V2}},
	}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if lb.Policy != policy || len(lb.Listeners) != 1 || lb.Listeners[0].ProxyProtocol != proxyprotocol.V2 || len(lb.CloudIPs) != 1 {
		return fmt.Errorf("update answered %+v", lb)
	}
	if lb, err = client.AddNodesToLoadBalancer(ctx, lb.ID, []brightbox.LoadBalancerNode{{Node: second}}); err != nil || len(lb.Nodes) != 2 {
		return fmt.Errorf("add_nodes: %v", err)
	}
	if lb, err = client.RemoveNodesFromLoadBalancer(ctx, lb.ID, []brightbox.LoadBalancerNode{{Node: first}}); err != nil || len(lb.Nodes) != 1 {
		return fmt.Errorf("remove_nodes: %v", err)
	}
	extra := []brightbox.LoadBalancerListener{{Protocol: listenerprotocol.Tcp, In: 443, Out: 30443, Timeout: 50000}}
	if lb, err = client.AddListenersToLoadBalancer(ctx, lb.ID, extra); err != nil || len(lb.Listeners) != 2 {
		return fmt.Errorf("add_listeners: %v", err)
	}
	if lb, err = client.RemoveListenersFromLoadBalancer(ctx, lb.ID, extra); err != nil || len(lb.Listeners) != 1 {
		return fmt.Errorf("remove_listeners: %v", err)
	}
	if lb, err = client.LockLoadBalancer(ctx, lb.ID); err != nil || !lb.Locked {
		return fmt.Errorf("lock: %v", err)
	}
	if _, err := client.DestroyLoadBalancer(ctx, lb.ID); err == nil {
		return fmt.Errorf("a locked balancer was deleted")
	}
	if lb, err = client.UnlockLoadBalancer(ctx, lb.ID); err != nil || lb.Locked {
		return fmt.Errorf("unlock: %v", err)
	}
	if _, err := client.UnMapCloudIP(ctx, cip.ID); err != nil {
		return fmt.Errorf("unmap: %w", err)
	}
	gone, err := client.DestroyLoadBalancer(ctx, lb.ID)
	if err != nil || gone.ID != lb.ID {
		return fmt.Errorf("delete: %v", err)
	}
	if _, err := waitFor(ctx, client, lb.ID, func(l *brightbox.LoadBalancer) bool {
		return l == nil || l.Status == loadbalancerstatus.Deleted
	}); err != nil {
		return err
	}
	if released, err := client.DestroyCloudIP(ctx, cip.ID); err != nil || released.ID != cip.ID {
		return fmt.Errorf("release cloud IP: %v", err)
	}
	return nil
}
