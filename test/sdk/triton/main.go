// A program of ours on triton-go, Triton's official Go SDK (pinned in go.mod), that
// test/integration/sdk-triton.test.ts runs against ccm's CloudAPI simulator: if the SDK cannot work
// with the simulator, the simulator is not the API the SDK was written for. Only triton-go's public
// API is used; it signs every request itself (rsa-sha1 with a PEM RSA key, Accept-Version 8).
// Environment: SIM_URL, SIM_ACCOUNT, SIM_KEY_ID (MD5 fingerprint), SIM_KEY_FILE (PEM private key),
// SIM_MACHINES (how many machines the simulator holds), SIM_MACHINE_ID (one of them).
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	triton "github.com/joyent/triton-go/v2"
	"github.com/joyent/triton-go/v2/account"
	"github.com/joyent/triton-go/v2/authentication"
	"github.com/joyent/triton-go/v2/compute"
	tritonerrors "github.com/joyent/triton-go/v2/errors"
)

func main() {
	ctx, cancel := deadline()
	defer cancel()
	login := os.Getenv("SIM_ACCOUNT")
	pem, err := os.ReadFile(os.Getenv("SIM_KEY_FILE"))
	if err != nil {
		fmt.Println("FAIL SIM_KEY_FILE:", err)
		os.Exit(2)
	}
	signer, err := authentication.NewPrivateKeySigner(authentication.PrivateKeySignerInput{
		KeyID:              os.Getenv("SIM_KEY_ID"),
		PrivateKeyMaterial: pem,
		AccountName:        login,
	})
	if err != nil {
		fmt.Println("FAIL signer:", err)
		os.Exit(2)
	}
	config := &triton.ClientConfig{
		TritonURL:   os.Getenv("SIM_URL"),
		AccountName: login,
		Signers:     []authentication.Signer{signer},
	}
	accounts, err := account.NewClient(config)
	if err != nil {
		fmt.Println("FAIL account client:", err)
		os.Exit(2)
	}
	machines, err := compute.NewClient(config)
	if err != nil {
		fmt.Println("FAIL compute client:", err)
		os.Exit(2)
	}
	want, _ := strconv.Atoi(os.Getenv("SIM_MACHINES"))
	id := os.Getenv("SIM_MACHINE_ID")

	check("get account", getAccount(ctx, accounts, login))
	check("list datacenters", listDatacenters(ctx, machines))
	check("list machines, two a page", listMachines(ctx, machines, want))
	check("count machines: the page's length", countMachines(ctx, machines, want))
	check("get machine", getMachine(ctx, machines, id))
	check("get a missing machine: triton-go's ResourceNotFound", missingMachine(ctx, machines))
	check("CNS tags: add, list, read back as CNS services, delete", cnsTags(ctx, machines, id))
	exitIfFailed()
}

func getAccount(ctx context.Context, c *account.AccountClient, login string) error {
	a, err := c.Get(ctx, &account.GetInput{})
	if err != nil {
		return err
	}
	if a.Login != login || a.ID == "" || !a.TritonCNSEnabled {
		return fmt.Errorf("account %+v", a)
	}
	return nil
}

func listDatacenters(ctx context.Context, c *compute.ComputeClient) error {
	dcs, err := c.Datacenters().List(ctx, &compute.ListDataCentersInput{})
	if err != nil {
		return err
	}
	if len(dcs) == 0 || dcs[0].Name == "" || dcs[0].URL == "" {
		return fmt.Errorf("datacenters %+v", dcs)
	}
	return nil
}

// Offset paging as CloudAPI's docs describe it: a page shorter than the limit is the last.
func listMachines(ctx context.Context, c *compute.ComputeClient, want int) error {
	seen := map[string]bool{}
	for offset := 0; ; {
		if offset > want {
			return fmt.Errorf("more pages than machines")
		}
		page, err := c.Instances().List(ctx, &compute.ListInstancesInput{Limit: 2, Offset: uint16(offset)})
		if err != nil {
			return err
		}
		for _, m := range page {
			if seen[m.ID] {
				return fmt.Errorf("machine %s on two pages", m.ID)
			}
			if m.Name == "" || m.State == "" || m.Created.IsZero() {
				return fmt.Errorf("machine %+v", m)
			}
			seen[m.ID] = true
		}
		if len(page) < 2 {
			break
		}
		offset += len(page)
	}
	if len(seen) != want {
		return fmt.Errorf("listed %d machines, not %d", len(seen), want)
	}
	return nil
}

// triton-go's Count reads x-resource-count of a HEAD: the length of the page it asked for.
func countMachines(ctx context.Context, c *compute.ComputeClient, want int) error {
	n, err := c.Instances().Count(ctx, &compute.ListInstancesInput{Limit: 2})
	if err != nil {
		return err
	}
	if expected := min(2, want); n != expected {
		return fmt.Errorf("count %d, not %d", n, expected)
	}
	return nil
}

func getMachine(ctx context.Context, c *compute.ComputeClient, id string) error {
	m, err := c.Instances().Get(ctx, &compute.GetInstanceInput{ID: id})
	if err != nil {
		return err
	}
	if m.ID != id || m.Name == "" || m.State != "running" || len(m.IPs) == 0 || m.PrimaryIP == "" {
		return fmt.Errorf("machine %+v", m)
	}
	return nil
}

func missingMachine(ctx context.Context, c *compute.ComputeClient) error {
	_, err := c.Instances().Get(ctx, &compute.GetInstanceInput{ID: "00000000-0000-4000-8000-000000000000"})
	if err == nil {
		return fmt.Errorf("no error for a missing machine")
	}
	if !tritonerrors.IsResourceNotFound(err) || !tritonerrors.IsSpecificStatusCode(err, 404) {
		return fmt.Errorf("not a 404 ResourceNotFound: %v", err)
	}
	return nil
}

// What ccm does for a LoadBalancer Service: AddMachineTags with the CNS services tag and its owner
// tag, ListMachineTags, then DeleteMachineTag of each.
func cnsTags(ctx context.Context, c *compute.ComputeClient, id string) error {
	const owner = "ccm.cns.11111111-aaaa-4bbb-8ccc-000000000001"
	in := c.Instances()
	err := in.AddTags(ctx, &compute.AddTagsInput{ID: id, Tags: map[string]interface{}{
		"triton.cns.services": "web:30080,api:30443",
		owner:                 `{"cluster":"c","service":"default/web","entries":["web:30080"]}`,
	}})
	if err != nil {
		return err
	}
	tags, err := in.ListTags(ctx, &compute.ListTagsInput{ID: id})
	if err != nil {
		return err
	}
	if _, ok := tags[owner]; !ok {
		return fmt.Errorf("owner tag missing: %v", tags)
	}
	m, err := in.Get(ctx, &compute.GetInstanceInput{ID: id})
	if err != nil {
		return err
	}
	services := append([]string(nil), m.CNS.Services...)
	sort.Strings(services)
	if strings.Join(services, ",") != "api:30443,web:30080" {
		return fmt.Errorf("CNS services %v", m.CNS.Services)
	}
	value, err := in.GetTag(ctx, &compute.GetTagInput{ID: id, Key: "triton.cns.services"})
	if err != nil {
		return err
	}
	if value != "web:30080,api:30443" {
		return fmt.Errorf("tag value %q", value)
	}
	for _, key := range []string{"triton.cns.services", owner} {
		if err := in.DeleteTag(ctx, &compute.DeleteTagInput{ID: id, Key: key}); err != nil {
			return err
		}
	}
	tags, err = in.ListTags(ctx, &compute.ListTagsInput{ID: id})
	if err != nil {
		return err
	}
	m, err = in.Get(ctx, &compute.GetInstanceInput{ID: id})
	if err != nil {
		return err
	}
	if _, ok := tags[owner]; ok || len(m.CNS.Services) > 0 {
		return fmt.Errorf("tags left after delete: %v, CNS %v", tags, m.CNS.Services)
	}
	return nil
}
