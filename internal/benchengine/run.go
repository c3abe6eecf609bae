package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// measurement is one whole command's cost.
type measurement struct {
	wall, cpu time.Duration
	rssKB     int64 // peak resident set size
	timedOut  bool
}

// run runs argv with stdout to the file stdout (when not empty), killing
// it after timeout, and measures it.
func run(argv []string, stdout string, timeout time.Duration) (measurement, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if stdout != "" {
		f, err := os.Create(stdout)
		if err != nil {
			return measurement{}, err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	resetPeakRSS()
	start := time.Now()
	err := cmd.Run()
	m := measurement{wall: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		m.cpu = ps.UserTime() + ps.SystemTime()
		m.rssKB = peakRSSKB(ps)
	}
	if ctx.Err() != nil {
		m.timedOut = true
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return m, nil
}

// rows reads a result CSV file as a canonical text: the header, then the
// rows sorted, with "forever" (tqmon) and an empty field (SQL's NULL) alike.
// It also returns the number of rows.
func rows(path string) (string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var header string
	var body []string
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			header, first = line, false
			continue
		}
		fields := strings.Split(line, ",")
		for i, v := range fields {
			if v == "forever" {
				fields[i] = ""
			}
		}
		body = append(body, strings.Join(fields, ","))
	}
	if err := sc.Err(); err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	if first {
		return "", 0, fmt.Errorf("%s: no header", path)
	}
	slices.Sort(body)
	return header + "\n" + strings.Join(body, "\n"), len(body), nil
}

// firstDifference describes where two canonical results part.
func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: %q against %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(la), len(lb))
}

var errDiffer = errors.New("results differ")

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
