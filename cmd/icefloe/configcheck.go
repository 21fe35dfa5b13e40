package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/suggest"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/planner"
)

// expandEnv replaces ${VAR} in the document's scalar values (never in its
// comments or keys) and returns the variables that are unset and the
// values substituted (secrets, for scrubbing errors). A plain scalar is
// resolved again after substitution, so `workers: ${N}` is a number.
func expandEnv(n *yaml.Node) (missing, values []string) {
	if n.Kind == yaml.ScalarNode && envRef.MatchString(n.Value) {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			if len(v) >= 3 {
				values = append(values, v)
			}
			return v
		})
		if n.Style == 0 {
			n.Tag = ""
		}
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue // a key
		}
		m, v := expandEnv(c)
		missing, values = append(missing, m...), append(values, v...)
	}
	return missing, values
}

// checkKeys reports every mapping key of n that t (a struct, or slices and
// pointers of one) has no yaml field for, with the nearest known key.
// Maps take any key. Durations must parse.
func checkKeys(n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var errs []error
	switch {
	case t == reflect.TypeOf(time.Duration(0)) && n.Kind == yaml.ScalarNode:
		if _, err := time.ParseDuration(n.Value); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %s: %q is not a duration (e.g. 90s, 5m, 1h30m)", n.Line, path, n.Value))
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			errs = append(errs, checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			full := key.Value
			if path != "" {
				full = path + "." + key.Value
			}
			ft, ok := fields[key.Value]
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: unknown key %q%s", key.Line, full, suggest.Hint(key.Value, names)))
				continue
			}
			errs = append(errs, checkKeys(val, ft, full)...)
		}
	}
	return errs
}

// yamlFields maps the yaml names of t's fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// checkListen checks a host:port to listen on (port 0: any free one).
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: bad host %q", addr, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// checkPeer checks the address of a server to reach: host:port, or
// grpc://, grpc+tls:// with a non-zero port.
func checkPeer(addr string) error {
	target := addr
	if strings.Contains(addr, "://") {
		var err error
		if target, _, err = flightclient.Parse(addr); err != nil {
			return err
		}
	}
	if err := checkListen(target); err != nil {
		return err
	}
	if _, port, _ := net.SplitHostPort(target); port == "0" {
		return fmt.Errorf("%q: port 0", addr)
	}
	return nil
}

// validateValues checks the values Config.Validate leaves to the parsers
// of their users: the memory limit, the addresses.
func (c Config) validateValues() error {
	var errs []error
	if c.MemoryLimit != "" {
		if n, err := engine.ParseMemoryLimit(c.MemoryLimit); err != nil {
			errs = append(errs, fmt.Errorf("config: memory_limit: %w", err))
		} else if n < engine.MinMemoryLimit {
			errs = append(errs, fmt.Errorf("config: memory_limit: %s is below the minimum of 16MiB", c.MemoryLimit))
		}
	}
	if c.HTTPListen != "" {
		if err := checkListen(c.HTTPListen); err != nil {
			errs = append(errs, fmt.Errorf("config: http_listen: %w", err))
		}
	}
	if c.Listen != "" {
		if err := checkListen(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("config: listen: %w", err))
		}
	}
	if c.REST != nil && c.REST.Listen != "" {
		if err := checkListen(c.REST.Listen); err != nil {
			errs = append(errs, fmt.Errorf("config: rest.listen: %w", err))
		}
	}
	for i, a := range c.WorkerAddresses {
		if a == "" {
			continue // Validate reports it
		}
		if err := checkPeer(a); err != nil {
			errs = append(errs, fmt.Errorf("config: worker_addresses[%d]: %w", i, err))
		}
	}
	if t := c.Tracing; t != nil && t.Endpoint != "" {
		switch err := checkPeer(t.Endpoint); {
		case strings.Contains(t.Endpoint, "://"):
			errs = append(errs, fmt.Errorf("config: tracing.endpoint: %q: give host:port, without a scheme", t.Endpoint))
		case err != nil:
			errs = append(errs, fmt.Errorf("config: tracing.endpoint: %w", err))
		}
	}
	return errors.Join(errs...)
}

// effective is the config with the defaults the roles apply filled in.
func (c Config) effective() Config {
	e := c
	if e.Listen == "" {
		e.Listen = defaultListen
	}
	if e.DataDir == "" {
		e.DataDir = defaultDataDir
	}
	if e.Workers == 0 {
		e.Workers = defaultWorkers
	}
	if e.TicketKey == "" && os.Getenv(TicketKeyEnv) != "" {
		e.TicketKey = os.Getenv(TicketKeyEnv)
	}
	if e.MetadataCacheBytes == 0 {
		e.MetadataCacheBytes = catalog.DefaultMetadataCacheBytes
	}
	if e.TicketTTL == 0 {
		e.TicketTTL = planner.DefaultTicketTTL
	}
	if e.WorkerAddresses == nil {
		e.WorkerAddresses = []string{}
	}
	if t := e.Tracing; t != nil && t.SampleRatio == 0 {
		e.Tracing = &TracingConfig{Endpoint: t.Endpoint, SampleRatio: tracing.DefaultSampleRatio, Insecure: t.Insecure, CAFile: t.CAFile}
	}
	return e
}

// effectiveText is what `config check` prints: the effective config,
// secrets redacted, with a note on the values that mean "decided at
// start".
func (c Config) effectiveText() string {
	e := c.effective()
	var b strings.Builder
	b.WriteString("# effective config: defaults applied, secrets redacted\n")
	if c.MemoryLimit == "" {
		b.WriteString("# memory_limit: none: each DuckDB takes its share of limits.memory_budget\n")
	}
	if e.Threads == 0 {
		b.WriteString("# threads: 0 is one per CPU\n")
	}
	if e.TicketKey == "" {
		b.WriteString("# ticket_key: none: serve makes a random one; coordinator and worker refuse to start\n")
	}
	b.WriteString(e.String())
	return b.String()
}
