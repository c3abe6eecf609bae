package parquet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDamagedFileRefused: a file whose bytes no longer match the
// manifest's checksum is refused, naming it, before any Parquet decoding
// (parquet-go panics, or does not stop, on some damaged files: byte flips
// of a recording's file found both).
func TestDamagedFileRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := recorded(t, dir, Options{Host: "web-1", Every: 10 * time.Minute}, -1).History(); err != nil {
		t.Fatalf("the undamaged recording: %v", err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "relation=Process", "host=*", "hour=*", "*.parquet"))
	if len(paths) == 0 {
		t.Fatal("no Process files")
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(paths[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.History()
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), paths[0]) {
		t.Fatalf("a damaged file read as %v; want an error naming it damaged", err)
	}
}
