package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// spillLock is the file in a spill folder whose flock its engine holds for
// its life; the kernel drops the lock when the process ends, however it
// ends, so a folder whose lock can be taken belongs to no live engine.
const spillLock = ".icefloe-spill.lock"

// spillGrace is how old a spill folder's lock must be before another
// engine may reclaim the folder: one made a moment ago may not hold its
// lock yet.
const spillGrace = 10 * time.Second

// spillPattern names the spill folders engines make under os.TempDir.
const spillPattern = "icefloe-spill-"

// claimSpill takes dir's lock and empties dir of what an engine that
// ended without Close (a killed process) left there. A folder another
// live engine holds is left as it is and nil is returned: spill files
// are named per database, so both can run.
func claimSpill(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, spillLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("engine: spill folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("engine: lock spill folder: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: spill folder: %w", err)
	}
	for _, e := range entries {
		if e.Name() != spillLock {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return f, nil
}

// reclaimSpills removes the spill folders under os.TempDir that engines
// of processes that ended without Close left behind, and returns how many.
func reclaimSpills(self string) int {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), spillPattern+"*"))
	n := 0
	for _, d := range dirs {
		if d == self {
			continue
		}
		lock := filepath.Join(d, spillLock)
		if st, err := os.Stat(lock); err != nil || time.Since(st.ModTime()) < spillGrace {
			continue // not an engine's, or one starting right now
		}
		f, err := os.OpenFile(lock, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if os.RemoveAll(d) == nil {
				n++
			}
		}
		f.Close()
	}
	return n
}
