package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/config"

	"github.com/prometheus/prometheus/discovery/triton"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// scraped is one target's /metrics as Prometheus' own text parser reads it.
type scraped struct {
	Address     string             `json:"address"`
	Status      int                `json:"status,omitempty"`
	ContentType string             `json:"content_type,omitempty"`
	Series      map[string]float64 `json:"series,omitempty"`
	Error       string             `json:"error,omitempty"`
}

// acceptHeader is what Prometheus sends for its default scrape protocols, the classic text format
// among them (scrape/scrape.go acceptHeader for config.DefaultScrapeProtocols).
const acceptHeader = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

// scrapeTargets fetches https://<__address__>/metrics of every target with the discovery's own TLS
// settings (cmon-certgen's example job uses the same certificate for both) and parses the answer
// with model/textparse, as a scrape does after choosing the parser by Content-Type: a Content-Type
// Prometheus refuses shows up as the error. It is not the scrape loop (no relabelling, no storage).
func scrapeTargets(ctx context.Context, conf *triton.SDConfig, groups []group) []scraped {
	out := []scraped{}
	tlsConfig, err := config.NewTLSConfig(&conf.TLSConfig)
	if err != nil {
		return append(out, scraped{Error: err.Error()})
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 10 * time.Second}
	for _, g := range groups {
		for _, t := range g.Targets {
			out = append(out, scrapeOne(ctx, client, t["__address__"]))
		}
	}
	return out
}

func scrapeOne(ctx context.Context, client *http.Client, address string) scraped {
	s := scraped{Address: address}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/metrics", http.NoBody)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	s.ContentType = resp.Header.Get("Content-Type")
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if resp.StatusCode != http.StatusOK {
		// scrape/scrape.go: a status other than 200 fails the scrape (up = 0).
		s.Error = fmt.Sprintf("server returned HTTP status %s", resp.Status)
		return s
	}
	p, err := textparse.New(body, s.ContentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if p == nil {
		s.Error = fmt.Sprint(err)
		return s
	}
	s.Series = map[string]float64{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.Error = err.Error()
			break
		}
		if entry == textparse.EntrySeries {
			series, _, v := p.Series()
			s.Series[string(series)] = v
		}
	}
	return s
}
