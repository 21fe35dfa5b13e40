package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSpillFolderClaimed: Open empties a spill folder no live engine
// holds, leaves one another engine holds alone, and, with its own folder
// under os.TempDir, removes the folders there of engines that ended
// without Close (not one made a moment ago).
func TestSpillFolderClaimed(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "spill")
	stale := filepath.Join(dir, "duckdb_temp_storage_DEFAULT-0.tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Open(ctx, Options{Threads: 1, MemoryLimit: "256MB", TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a dead engine's spill file survived Open: %v", err)
	}
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	e2, err := Open(ctx, Options{Threads: 1, MemoryLimit: "256MB", TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("Open emptied a spill folder a live engine holds: %v", err)
	}
	e2.Close()
	e.Close()

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, age time.Duration) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		lock := filepath.Join(d, spillLock)
		if err := os.WriteFile(lock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(lock, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead, young, other := mk(spillPattern+"dead", time.Hour), mk(spillPattern+"young", 0), mk("not-icefloe", time.Hour)
	e3, err := Open(ctx, Options{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	own := e3.tempDir
	for d, want := range map[string]bool{dead: false, young: true, other: true, own: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	e3.Close()
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("Close left its own spill folder: %v", err)
	}
}
