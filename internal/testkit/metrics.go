package testkit

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape reads the Prometheus metrics served at url as
// "name{label=value,…}" → value, the labels sorted by name (a counter's
// value or a gauge's).
func Scrape(t testing.TB, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.Counter.GetValue()
			}
			got[name+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return got
}
