// triton-sd runs Prometheus' own Triton service discovery (github.com/prometheus/prometheus,
// discovery/triton) once and prints what it found, for the tests of the CMON simulator
// (test/clouds/triton/cmon.ts).
//
//	triton-sd [-scrape] CONFIG.yaml
//	triton-sd -job [-ca CA.pem] [-scrape] PROMETHEUS.yml
//
// CONFIG.yaml is one entry of a scrape job's triton_sd_configs. The output is one JSON object:
//
//	{"groups":[{"source":"...","targets":[{"__address__":"...","__meta_triton_machine_id":"..."}]}]}
//
// or, when the discovery logged an error instead of sending targets, {"error":"..."} with exit code 1.
// With -scrape it also holds "scrapes": every target's /metrics read by Prometheus' text parser
// (scrape.go).
//
// With -job the file is a whole Prometheus configuration, loaded and validated by Prometheus' own
// config package as `prometheus` and `promtool check config` load it (job.go); the first scrape job's
// triton_sd_configs entry is discovered, and each target's labels then go through the job's
// relabel_configs with Prometheus' own model/relabel ("targets": the label sets Prometheus would scrape;
// "dropped": the machine ids the relabelling dropped). -ca adds a CA to the TLS settings that have
// none, as a system trust store that holds CMON's certificate authority would.
//
// Why a small program and not the prometheus binary: this links only the discovery package, the text
// parser and their dependencies (no TSDB, no web UI, no PromQL, no scrape loop), so it builds in a
// fraction of the time, and it runs exactly one refresh through the same code path
// (refresh.Discovery.Run -> triton.Discovery.refresh) that Prometheus runs, with no wait for a
// scrape interval or the first sync, and prints what it found instead of storing it. It also lets the
// program resolve every name to 127.0.0.1 in-process (resolve.go): CMON routes on the Host header
// (cmon.<dc>.<suffix>, <vm_uuid>.cmon.<dc>.<suffix>), so the names must stay real, and the tests may
// send no traffic anywhere but loopback.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v2"

	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/discovery/triton"
)

type group struct {
	Source  string              `json:"source"`
	Targets []map[string]string `json:"targets"`
	Labels  map[string]string   `json:"labels,omitempty"`
}

type result struct {
	Groups  []group   `json:"groups,omitempty"`
	Scrapes []scraped `json:"scrapes,omitempty"`
	// With -job: the label sets of the targets the relabelling kept, and the machine ids it dropped.
	Targets []map[string]string `json:"targets,omitempty"`
	Dropped []string            `json:"dropped,omitempty"`
	Job     string              `json:"job,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// errorHandler turns the discovery's "Unable to refresh target groups" log record into the result:
// refresh.Discovery.Run reports a failed refresh only by logging it.
type errorHandler struct{ errs chan<- string }

func (h errorHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h errorHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h errorHandler) WithGroup(string) slog.Handler                { return h }
func (h errorHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.Key + "=" + a.Value.String()
		return true
	})
	select {
	case h.errs <- msg:
	default:
	}
	return nil
}

func main() {
	out := json.NewEncoder(os.Stdout)
	fail := func(msg string) {
		_ = out.Encode(result{Error: msg})
		os.Exit(1)
	}
	scrape := flag.Bool("scrape", false, "also fetch and parse every target's /metrics")
	job := flag.Bool("job", false, "the file is a whole Prometheus configuration: discover and relabel its first job")
	ca := flag.String("ca", "", "with -job: a CA file for the TLS settings that name none")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: triton-sd [-scrape] CONFIG.yaml | triton-sd -job [-ca CA.pem] [-scrape] PROMETHEUS.yml")
		os.Exit(2)
	}
	file := flag.Arg(0)
	loopbackOnly()

	if *job {
		res, err := runJob(file, *ca, *scrape)
		if err != "" {
			fail(err)
		}
		_ = out.Encode(res)
		return
	}

	raw, err := os.ReadFile(file)
	if err != nil {
		fail(err.Error())
	}
	var conf triton.SDConfig
	if err := yaml.UnmarshalStrict(raw, &conf); err != nil {
		fail("config: " + err.Error())
	}
	abs, _ := filepath.Abs(file)
	conf.SetDirectory(filepath.Dir(abs))

	res, msg := discover(&conf, *scrape)
	if msg != "" {
		fail(msg)
	}
	_ = out.Encode(res)
}

// discover runs one refresh of the Triton discovery `conf` and, with scrape, scrapes what it found;
// a refresh that failed is the message the discovery logged.
func discover(conf *triton.SDConfig, scrape bool) (result, string) {
	reg := prometheus.NewRegistry()
	metrics := conf.NewDiscovererMetrics(reg, discovery.NewRefreshMetrics(reg))
	if err := metrics.Register(); err != nil {
		return result{}, err.Error()
	}
	errs := make(chan string, 1)
	d, err := conf.NewDiscoverer(discovery.DiscovererOptions{
		Logger:  slog.New(errorHandler{errs: errs}),
		Metrics: metrics,
		SetName: "triton",
	})
	if err != nil {
		return result{}, err.Error()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := make(chan []*targetgroup.Group, 1)
	go d.Run(ctx, ch)
	select {
	case tgs := <-ch:
		res := result{Groups: []group{}}
		for _, tg := range tgs {
			g := group{Source: tg.Source, Targets: []map[string]string{}}
			for _, t := range tg.Targets {
				m := map[string]string{}
				for k, v := range t {
					m[string(k)] = string(v)
				}
				g.Targets = append(g.Targets, m)
			}
			if len(tg.Labels) > 0 {
				g.Labels = map[string]string{}
				for k, v := range tg.Labels {
					g.Labels[string(k)] = string(v)
				}
			}
			res.Groups = append(res.Groups, g)
		}
		if scrape {
			res.Scrapes = scrapeTargets(ctx, conf, res.Groups)
		}
		return res, ""
	case msg := <-errs:
		return result{}, msg
	case <-ctx.Done():
		return result{}, "no refresh within 30s"
	}
}
