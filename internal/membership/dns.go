package membership

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"go.uber.org/zap"
)

// DefaultDNSInterval is how often a DNS source is resolved again.
const DefaultDNSInterval = 5 * time.Second

// DNSOptions configure a DNS source of worker locations.
type DNSOptions struct {
	// Target is host:port; every address the host resolves to is a worker
	// listening on port (a Kubernetes headless service lists its ready
	// pods this way). Required.
	Target string
	// Scheme of the locations made: grpc:// (default) or grpc+tls://.
	Scheme string
	// Interval between resolutions; 0 means DefaultDNSInterval.
	Interval time.Duration
	// Resolver defaults to net.DefaultResolver.
	Resolver *net.Resolver
	Logger   *zap.Logger
}

// Validate reports every problem at once.
func (o DNSOptions) Validate() error {
	var errs []error
	if host, port, err := net.SplitHostPort(o.Target); err != nil || host == "" || port == "" {
		errs = append(errs, fmt.Errorf("membership: worker DNS name %q: want host:port", o.Target))
	}
	if o.Scheme != "" && o.Scheme != "grpc://" && o.Scheme != "grpc+tls://" {
		errs = append(errs, fmt.Errorf("membership: worker DNS scheme %q: want grpc:// or grpc+tls://", o.Scheme))
	}
	if o.Interval < 0 {
		errs = append(errs, errors.New("membership: DNS interval must be >= 0"))
	}
	return errors.Join(errs...)
}

// DNS resolves a name into worker locations, again every interval.
type DNS struct {
	o DNSOptions
}

// NewDNS checks o and fills its defaults.
func NewDNS(o DNSOptions) (*DNS, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Scheme == "" {
		o.Scheme = "grpc://"
	}
	if o.Interval == 0 {
		o.Interval = DefaultDNSInterval
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &DNS{o: o}, nil
}

// Resolve returns the sorted locations the name resolves to now.
func (d *DNS) Resolve(ctx context.Context) ([]string, error) {
	host, port, _ := net.SplitHostPort(d.o.Target)
	ctx, cancel := context.WithTimeout(ctx, d.o.Interval)
	defer cancel()
	addrs, err := d.o.Resolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("membership: resolve %s: %w", host, err)
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, d.o.Scheme+net.JoinHostPort(a, port))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Run resolves now and every interval until ctx ends, calling update with
// each resolution's locations. A failed resolution keeps the last answer
// (logged once per failure streak): a DNS hiccup must not empty the pool.
func (d *DNS) Run(ctx context.Context, update func([]string)) {
	t := time.NewTicker(d.o.Interval)
	defer t.Stop()
	failing := false
	for {
		locs, err := d.Resolve(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				d.o.Logger.Warn("worker DNS lookup failed; keeping the last answer", zap.String("name", d.o.Target), zap.Error(err))
			}
			failing = true
		case err == nil:
			failing = false
			update(locs)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
