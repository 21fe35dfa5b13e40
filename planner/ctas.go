package planner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
)

// insertQuery runs INSERT INTO parts [(cols)] query.
func (p *Planner) insertQuery(ctx context.Context, sess Session, parts, cols []string, query string, args ...any) (int64, error) {
	tgt, err := p.LoadTarget(ctx, sess, parts, authz.Insert)
	if err != nil {
		return 0, err
	}
	return p.insertSelect(ctx, sess, tgt, cols, query, args...)
}

// columnNames reads "a, b, "c"" (the inside of an INSERT column list).
func (p *Parser) columnNames() ([]string, error) {
	var out []string
	for {
		c, err := p.Ident()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if p.Pos >= len(p.toks) {
			return out, nil
		}
		if !p.AcceptPunct(",") {
			return nil, p.Unexpected()
		}
	}
}

// ctas runs CREATE TABLE [IF NOT EXISTS] name [PARTITIONED BY (…)]
// [WITH (…)] AS query. ok is false when the statement is a plain CREATE
// TABLE with a column list, which ddlCreateTable runs.
func (p *Planner) ctas(ctx context.Context, sess Session, ps *Parser) (n int64, ok bool, err error) {
	ps.Pos = 2
	ifNotExists := ps.Accept("IF", "NOT", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return 0, false, nil
	}
	if ps.AtPunct("(") {
		return 0, false, nil
	}
	var (
		partItems []PartitionItem
		props     = iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(DefaultCommitRetries)}
		seenPart  bool
		seenWith  bool
		sortItems []ddlSortItem
		seenOrder bool
		query     string
	)
	for ps.Pos < len(ps.toks) && query == "" {
		switch {
		case !seenPart && ps.Accept("PARTITIONED", "BY"):
			seenPart = true
			if partItems, err = ps.partitionItems(); err != nil {
				return 0, true, err
			}
		case !seenOrder && ps.Accept("ORDERED", "BY"):
			seenOrder = true
			if sortItems, err = ps.sortItems(); err != nil {
				return 0, true, err
			}
		case !seenWith && ps.Accept("WITH"):
			seenWith = true
			if err := ps.Properties(props); err != nil {
				return 0, true, err
			}
		case ps.At("AS") && ps.Pos+1 < len(ps.toks):
			query = ps.Text(ps.Pos+1, len(ps.toks)-1)
		default:
			return 0, true, ps.Unexpected()
		}
	}
	if query == "" {
		return 0, true, ddlSyntaxf("CREATE TABLE needs a column list or AS query")
	}
	ref, err := TableName(sess, parts)
	if err != nil {
		return 0, true, err
	}
	ref = p.ExistingSchema(ctx, ref)
	if err := p.Authorize(ctx, authz.TableObject(ref), authz.Create); err != nil {
		return 0, true, err
	}
	mt, err := p.Mount(ref.Catalog)
	if err != nil {
		return 0, true, err
	}
	columns, err := p.QueryColumns(ctx, sess, query)
	if err != nil {
		return 0, true, err
	}
	schema, err := p.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return 0, true, err
	}
	spec, err := ddlPartitionSpec(schema, partItems)
	if err != nil {
		return 0, true, err
	}
	cat := mt.Catalog
	exists, err := cat.CheckTableExists(ctx, ref.Ident())
	if err != nil && !errors.Is(err, icecat.ErrNoSuchNamespace) {
		return 0, true, fmt.Errorf("create table %s: %w", ref, err)
	}
	if exists {
		if ifNotExists {
			return 0, true, nil
		}
		return 0, true, fmt.Errorf("%w: table %s", ErrExists, ref)
	}
	order, err := ddlSortOrder(schema, sortItems)
	if err != nil {
		return 0, true, err
	}
	if err := encryptionProps(ctx, mt, props); err != nil {
		return 0, true, err
	}
	opts, err := placeTable(mt, props)
	if err != nil {
		return 0, true, err
	}
	opts = append(opts, icecat.WithPartitionSpec(&spec), icecat.WithSortOrder(order), icecat.WithProperties(props))
	if d := DryRunOf(ctx); d != nil {
		return 0, true, p.explainCTAS(ctx, sess, d, ref, columns, query)
	}
	create := func(staging catalog.TableRef) error {
		if _, err := mt.Internal().CreateTable(ctx, staging.Ident(), schema, opts...); err != nil {
			if errors.Is(err, icecat.ErrNoSuchNamespace) {
				return fmt.Errorf("%w: schema %s.%s", ErrNotFound, ref.Catalog, ref.Schema)
			}
			return fmt.Errorf("%w: create table %s: %v", ErrInvalid, ref, err)
		}
		return nil
	}
	fill := func(tgt *WriteTarget) (int64, error) { return p.insertSelect(ctx, sess, tgt, nil, query) }
	n, err = p.staged(ctx, mt.Internal(), ref, false, create, fill)
	if ifNotExists && errors.Is(err, ErrExists) {
		return 0, true, nil
	}
	return n, true, err
}

// QueryColumns returns the column list of a CREATE TABLE for the result
// of query, as DuckDB types it: "("a" INTEGER, "b" VARCHAR)"; query binds
// as a query of sess would, checked and authorized (Planner.ParseColumns
// reads the list back as an Iceberg schema).
func (p *Planner) QueryColumns(ctx context.Context, sess Session, query string) (string, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, sess, query, true)
	if err != nil {
		return "", err
	}
	if b.duckTypes == nil {
		return "", fmt.Errorf("%w: the query's columns need distinct names", ErrInvalid)
	}
	defs := make([]string, len(b.duckTypes))
	for i, f := range b.schema.Fields() {
		typ := b.duckTypes[i]
		if typ == `"NULL"` || typ == "NULL" {
			return "", fmt.Errorf("%w: column %q of the query is an untyped NULL; CAST it", ErrInvalid, f.Name)
		}
		defs[i] = engine.Quote(f.Name) + " " + typ
	}
	return "(" + strings.Join(defs, ", ") + ")", nil
}
