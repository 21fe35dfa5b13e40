package flightio

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/icefloe/icefloe/internal/flightio/crafted"
)

// readChecked reads a client's IPC stream b as the server does and uses
// each batch; a panic anywhere fails t.
func readChecked(t testing.TB, b []byte) (batches int, err error) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic reading a client's stream: %v", p)
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer r.Release()
	rows := Checked(r)
	for rows.Next() {
		batches++
		if err := crafted.Use(rows.RecordBatch()); err != nil {
			t.Fatalf("a checked batch does not write: %v", err)
		}
	}
	return batches, rows.Err()
}

// TestCraftedStreamsRefused: every crafted stream ends with
// ErrMalformed, and nothing panics reading or using its batches.
func TestCraftedStreamsRefused(t *testing.T) {
	for name, b := range crafted.Streams(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := readChecked(t, b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v, want ErrMalformed", err)
			}
		})
	}
}

// TestValidStreamsRead: the streams the crafted ones come from read
// whole, so the check refuses only what is broken.
func TestValidStreamsRead(t *testing.T) {
	for _, b := range crafted.Seeds(t) {
		if _, err := readChecked(t, b); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzChecked: whatever bytes a client sends as an IPC stream, its
// checked batches are read and used without a panic, and a stream that
// fails after its schema fails with ErrMalformed.
func FuzzChecked(f *testing.F) {
	for _, b := range crafted.Seeds(f) {
		f.Add(b)
	}
	for _, b := range crafted.Streams(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := readChecked(t, b)
		if err == nil || errors.Is(err, ErrMalformed) {
			return
		}
		// ipc.NewReader's own errors (a schema that does not decode):
		// the Flight SQL server refuses those itself, as InvalidArgument.
		if _, rerr := ipc.NewReader(bytes.NewReader(b)); rerr == nil {
			t.Fatalf("error %v, want ErrMalformed", err)
		}
	})
}
