package icemeta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro"
)

// RepairManifestSchemas gives every decimal in the Avro schema of the
// manifests snap writes its scale, before snap is committed. iceberg-go
// (internal.DecimalNode, written by twmb/avro, which leaves out a zero
// scale) writes the partition field of a DECIMAL(p,0) column as a decimal
// without "scale": the Avro spec reads a missing scale as 0, but pyiceberg
// requires the key and fails to read every such manifest (KeyError
// 'scale'), so no scan of the table plans.
//
// Only the schema in the file's header changes: a decimal's scale does
// not change how its values are encoded, so the data blocks are copied as
// they are. A rewritten manifest is longer by a few bytes; the manifest
// list gets its new length and is written again, in place, as
// RepairManifestList writes it (nothing references either file yet). It
// reports whether it rewrote anything. Only manifests of specs with a
// decimal partition field are read.
func RepairManifestSchemas(ctx context.Context, fsys iceio.IO, meta table.Metadata, snap table.Snapshot) (bool, error) {
	if snap.ManifestList == "" {
		return false, nil
	}
	files, err := readManifestList(fsys, snap.ManifestList)
	if err != nil {
		return false, err
	}
	changed := false
	for _, mf := range files {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if mf.SnapshotID() != snap.SnapshotID || !decimalPartition(meta, mf) {
			continue
		}
		n, ok, err := repairManifestSchema(fsys, mf.FilePath())
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		if err := setLength(mf, n); err != nil {
			return false, err
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	return true, writeManifestList(fsys, meta.Version(), snap, files)
}

// decimalPartition tells whether mf's partition spec has a decimal field,
// or is not in meta (a spec the same commit adds), so its schema needs a
// look.
func decimalPartition(meta table.Metadata, mf iceberg.ManifestFile) bool {
	spec := meta.PartitionSpecByID(int(mf.PartitionSpecID()))
	if spec == nil {
		return true
	}
	for _, f := range spec.PartitionType(meta.CurrentSchema()).FieldList {
		if _, ok := f.Type.(iceberg.DecimalType); ok {
			return true
		}
	}
	return false
}

// ocfHeader is the header of an Avro object container file, as the Avro
// spec gives its schema: what follows it (the data blocks, each ending in
// the sync marker) does not depend on the header's length.
var ocfHeader = avro.MustParse(`{"type": "record", "name": "org.apache.avro.file.Header", "fields": [
	{"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
	{"name": "meta", "type": {"type": "map", "values": "bytes"}},
	{"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}}]}`)

type ocfHeaderValue struct {
	Magic [4]byte           `avro:"magic"`
	Meta  map[string][]byte `avro:"meta"`
	Sync  [16]byte          `avro:"sync"`
}

// repairManifestSchema rewrites the manifest at path when its header's
// schema has a decimal without a scale, and returns the file's new
// length.
func repairManifestSchema(fsys iceio.IO, path string) (int64, bool, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("manifest %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return 0, false, fmt.Errorf("manifest %s: %w", path, err)
	}
	var h ocfHeaderValue
	blocks, err := ocfHeader.Decode(data, &h)
	if err != nil {
		return 0, false, fmt.Errorf("manifest %s: header: %w", path, err)
	}
	if string(h.Magic[:]) != "Obj\x01" {
		return 0, false, fmt.Errorf("manifest %s: not an Avro file", path)
	}
	schema, ok, err := withDecimalScales(h.Meta["avro.schema"])
	if err != nil {
		return 0, false, fmt.Errorf("manifest %s: avro.schema: %w", path, err)
	}
	if !ok {
		return 0, false, nil
	}
	if _, err := avro.Parse(string(schema)); err != nil {
		return 0, false, fmt.Errorf("manifest %s: repaired avro.schema: %w", path, err)
	}
	h.Meta["avro.schema"] = schema
	out, err := ocfHeader.Encode(&h)
	if err != nil {
		return 0, false, fmt.Errorf("manifest %s: header: %w", path, err)
	}
	out = append(out, blocks...)
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return 0, false, fmt.Errorf("manifest %s: the table's file IO cannot write", path)
	}
	if err := wfs.WriteFile(path, out); err != nil {
		return 0, false, fmt.Errorf("manifest %s: %w", path, err)
	}
	return int64(len(out)), true, nil
}

// withDecimalScales returns the Avro schema (JSON) with "scale": 0 in
// every decimal that has none, its keys in their order, and whether it
// added any.
func withDecimalScales(schema []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var out bytes.Buffer
	changed, err := copyJSON(dec, &out)
	if err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false, errors.New("text after the schema")
	}
	return out.Bytes(), changed, nil
}

// copyJSON copies one JSON value from dec to out, adding "scale": 0 to
// each object with "logicalType": "decimal" and no "scale".
func copyJSON(dec *json.Decoder, out *bytes.Buffer) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return false, writeJSON(out, tok)
	}
	changed := false
	switch delim {
	case '[':
		out.WriteByte('[')
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			c, err := copyJSON(dec, out)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		out.WriteByte(']')
	case '{':
		out.WriteByte('{')
		decimal, scale := false, false
		for i := 0; dec.More(); i++ {
			key, err := dec.Token()
			if err != nil {
				return false, err
			}
			name, _ := key.(string)
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeJSON(out, name); err != nil {
				return false, err
			}
			out.WriteByte(':')
			start := out.Len()
			c, err := copyJSON(dec, out)
			if err != nil {
				return false, err
			}
			changed = changed || c
			switch name {
			case "logicalType":
				decimal = bytes.Equal(out.Bytes()[start:], []byte(`"decimal"`))
			case "scale":
				scale = true
			}
		}
		if decimal && !scale {
			out.WriteString(`,"scale":0`)
			changed = true
		}
		out.WriteByte('}')
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return false, err
	}
	return changed, nil
}

// writeJSON writes a scalar token (string, json.Number, bool or nil) as
// JSON.
func writeJSON(out *bytes.Buffer, v any) error {
	if n, ok := v.(json.Number); ok {
		out.WriteString(n.String())
		return nil
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	out.Truncate(out.Len() - 1) // Encode's newline
	return nil
}

// setLength sets the length of mf, a manifest file read from a manifest
// list, by reflection as setPartitions sets its summaries
// (TestSetLength pins that this still works).
func setLength(mf iceberg.ManifestFile, n int64) error {
	v := reflect.ValueOf(mf)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("manifest %s: unexpected manifest file type %T", mf.FilePath(), mf)
	}
	field := v.Elem().FieldByName("Len")
	if !field.IsValid() || !field.CanSet() || field.Kind() != reflect.Int64 {
		return fmt.Errorf("manifest %s: cannot set the length of %T", mf.FilePath(), mf)
	}
	field.SetInt(n)
	return nil
}
