package planner

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestStoredViewSQLIsChecked: a view stored by another engine is checked
// like client SQL when it is read: no file-reading table function, no
// cycle of views.
func TestStoredViewSQLIsChecked(t *testing.T) {
	e := newDDLEnv(t)
	ctx := context.Background()
	mt, err := e.p.opts.Mounts.Get("local")
	if err != nil {
		t.Fatal(err)
	}
	views, err := mt.Views()
	if err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.String})
	for name, sql := range map[string]string{
		"leak":  "SELECT * FROM read_csv('/etc/passwd')",
		"state": "SELECT current_setting('temp_directory') AS x",
		"ping":  "SELECT * FROM pong",
		"pong":  "SELECT * FROM ping",
	} {
		if err := views.CreateView(ctx, table.Identifier{"default", name}, schema, sql); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]error{
		"SELECT * FROM leak":  ErrRefused,
		"SELECT * FROM state": ErrRefused,
		"SELECT * FROM ping":  ErrInvalid,
	} {
		if _, err := planText(ctx, e.p, e.sess, q); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", q, err, want)
		}
	}
}
