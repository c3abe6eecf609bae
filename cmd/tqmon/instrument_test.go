package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestInstrumentExample: the program of docs/instrument.md builds (into a
// temporary directory, never the source tree), serves its sensors with
// the one call the doc shows, and tqmon queries it live and records it.
func TestInstrumentExample(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "jobs")
	build := exec.Command("go", "build", "-o", prog, "./docs/examples/instrument")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// The committed sensors are what jobs.sdl generates now.
	example := filepath.Join(root, "docs", "examples", "instrument")
	if code, _, errs := tqmon(t, "sensors", "compile", filepath.Join(example, "jobs.sdl"), "--go-out", filepath.Join(dir, "gen"),
		"--go-package", "jobsensors"); code != 0 {
		t.Fatalf("sensors compile: %s", errs)
	}
	gen, _ := os.ReadFile(filepath.Join(dir, "gen", "jobsensors.go"))
	committed, _ := os.ReadFile(filepath.Join(example, "jobsensors", "jobsensors.go"))
	if len(gen) == 0 || string(gen) != string(committed) {
		t.Errorf("docs/examples/instrument/jobsensors is stale: go generate ./docs/examples/instrument")
	}
	sock := filepath.Join(dir, "jobs.sock")
	jobs := exec.Command(prog, "-listen", sock, "-duration", "60s")
	var jobsErr strings.Builder
	jobs.Stderr = &jobsErr
	if err := jobs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Process.Kill(); jobs.Wait() })
	waitFor(t, "the program's socket", 10*time.Second, func() bool { return strings.Contains(jobsErr.String(), "serving monitors") })

	tq := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tqmon %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runs := `range of r is Runs retrieve (r.Job, r.Worker)`
	live := tq("query", "--connect", sock, "--duration", "1500ms", "--format", "csv", "-e", runs)
	if !strings.HasPrefix(live, "Job,Worker,from,to\n") || !strings.Contains(live, ",W1,") || !strings.Contains(live, "\nJ") {
		t.Errorf("live query:\n%s", live)
	}
	sizes := `range of s is Submitted retrieve (s.Job, s.Size) where s.Size = 4`
	if out := tq("query", "--connect", sock, "--duration", "1s", "--format", "csv", "-e", sizes); strings.Count(out, ",4,") < 2 {
		t.Errorf("events:\n%s", out)
	}
	db := filepath.Join(dir, "jobs.db")
	tq("record", "--connect", sock, "--db", db, "--duration", "1500ms", "--relations", "Runs,Submitted")
	rec := tq("query", "--db", db, "--format", "csv", "-e", runs)
	if strings.Count(rec, "\n") < 5 || !strings.Contains(rec, ",W2,") {
		t.Errorf("recorded:\n%s", rec)
	}
}

// TestInstalledOffline: tqmon installs with go install from the module
// cache alone (GOPROXY=off: no network), and the installed binary runs the
// examples of its --help from an empty directory — the testdata/ they
// name comes from the binary (package tqmon's embedded examples).
func TestInstalledOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs tqmon")
	}
	gobin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/tqmon")
	install.Dir = root
	install.Env = append(os.Environ(), "GOPROXY=off", "GOBIN="+gobin, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install offline: %v\n%s", err, out)
	}
	bin := filepath.Join(gobin, "tqmon")
	empty := t.TempDir()
	var cmds []*cobra.Command
	commandPaths(newRoot(io.Discard, io.Discard), "", &cmds)
	ran := 0
	for _, c := range cmds {
		path := strings.TrimPrefix(c.CommandPath(), "tqmon ")
		run, ok := helpExamples[path]
		if !ok || run.kernel || run.keys != "" {
			continue
		}
		paras := exampleParagraphs(c.Example)
		t.Run(strings.ReplaceAll(path, " ", "-"), func(t *testing.T) {
			runExample(t, bin, empty, run, paras[run.para])
		})
		ran++
	}
	// And the first thing tqmon --help says to run.
	main := exampleParagraphs(doc("main"))
	if len(main) == 0 {
		t.Fatal("tqmon --help shows no example")
	}
	runExample(t, bin, empty, exampleRun{want: "P2"}, main[len(main)-1]) // the first paragraph is prose
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the examples wrote into the working directory: %v", entries)
	}
	if ran < 10 {
		t.Errorf("only %d examples ran", ran)
	}
}
