package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/triton"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// runJob loads a whole Prometheus configuration with Prometheus' own config package (config.LoadFile
// and GetScrapeConfigs, as the prometheus binary and `promtool check config` load and validate it:
// unknown keys, a bad relabel rule or a discovery that refuses its settings fail here), discovers the
// first scrape job's triton_sd_configs entry, and relabels each target found with the job's
// relabel_configs through model/relabel.
func runJob(file, ca string, scrape bool) (result, string) {
	cfg, err := config.LoadFile(file, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return result{}, "config: " + err.Error()
	}
	jobs, err := cfg.GetScrapeConfigs()
	if err != nil {
		return result{}, "config: " + err.Error()
	}
	if len(jobs) == 0 {
		return result{}, "config: no scrape job"
	}
	sc := jobs[0]
	var conf *triton.SDConfig
	for _, d := range sc.ServiceDiscoveryConfigs {
		if t, ok := d.(*triton.SDConfig); ok {
			conf = t
			break
		}
	}
	if conf == nil {
		return result{}, "config: the first scrape job has no triton_sd_configs"
	}
	if ca != "" && conf.TLSConfig.CAFile == "" && conf.TLSConfig.CA == "" {
		conf.TLSConfig.CAFile = ca
	}
	res, msg := discover(conf, scrape)
	if msg != "" {
		return result{}, msg
	}
	res.Job = sc.JobName
	res.Targets = []map[string]string{}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for _, g := range res.Groups {
		for _, t := range g.Targets {
			kept, ok := relabelTarget(lb, sc, t, g.Labels)
			if !ok {
				res.Dropped = append(res.Dropped, t["__meta_triton_machine_id"])
				continue
			}
			res.Targets = append(res.Targets, kept)
		}
	}
	return res, ""
}

// relabelTarget is what scrape.PopulateLabels (scrape/target.go, v0.316.0) does with one discovered
// target, without importing the scrape package (which brings the TSDB): the target's and its group's
// labels, the job's defaults (job, __scheme__, __metrics_path__, intervals), the job's relabel_configs
// by relabel.ProcessBuilder, then the __meta_ labels deleted and `instance` defaulted to the address.
// The other labels starting with __ are left out too, as the scrape loop leaves them out of the
// series, but for __address__ and __scheme__: where and how the target is scraped.
func relabelTarget(lb *labels.Builder, sc *config.ScrapeConfig, target, group map[string]string) (map[string]string, bool) {
	lb.Reset(labels.EmptyLabels())
	for k, v := range target {
		lb.Set(k, v)
	}
	for k, v := range group {
		if _, ok := target[k]; !ok {
			lb.Set(k, v)
		}
	}
	for _, l := range []labels.Label{
		{Name: model.JobLabel, Value: sc.JobName},
		{Name: model.ScrapeIntervalLabel, Value: sc.ScrapeInterval.String()},
		{Name: model.ScrapeTimeoutLabel, Value: sc.ScrapeTimeout.String()},
		{Name: model.MetricsPathLabel, Value: sc.MetricsPath},
		{Name: model.SchemeLabel, Value: sc.Scheme},
	} {
		if lb.Get(l.Name) == "" {
			lb.Set(l.Name, l.Value)
		}
	}
	if !relabel.ProcessBuilder(lb, sc.RelabelConfigs...) {
		return nil, false
	}
	addr := lb.Get(model.AddressLabel)
	if lb.Get(model.InstanceLabel) == "" {
		lb.Set(model.InstanceLabel, addr)
	}
	out := map[string]string{}
	lb.Labels().Range(func(l labels.Label) {
		if !strings.HasPrefix(l.Name, "__") {
			out[l.Name] = l.Value
		}
	})
	out["__address__"] = addr
	out["__scheme__"] = lb.Get(model.SchemeLabel)
	return out, true
}
