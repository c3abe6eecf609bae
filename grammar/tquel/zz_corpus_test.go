package tquel

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(dir + "/*")
	type r struct {
		d    time.Duration
		name string
		n    int
	}
	var rs []r
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.SplitN(string(data), "\n", 2)
		s := strings.TrimSpace(lines[1])
		s = strings.TrimSuffix(strings.TrimPrefix(s, "string("), ")")
		text, err := strconv.Unquote(s)
		if err != nil {
			continue
		}
		start := time.Now()
		Parse("x", text)
		rs = append(rs, r{time.Since(start), f, len(text)})
	}
	var max r
	var total time.Duration
	for _, x := range rs {
		total += x.d
		if x.d > max.d {
			max = x
		}
	}
	fmt.Println(len(rs), total, max.d, max.name, max.n)
}
