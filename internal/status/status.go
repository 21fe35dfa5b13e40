package status

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
)

//go:embed page.html
var files embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"ms":      func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"ended":   func(s queryreg.State) bool { return s.Ended() },
	"percent": func(f float64) int { return int(f * 100) },
	"size":    size,
}).ParseFS(files, "page.html"))

// size is n bytes in B, kB, MB, GB or TB (powers of 1000, one decimal).
func size(n int64) string {
	units := []string{"kB", "MB", "GB", "TB"}
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n)/1000, 0
	for f >= 1000 && u < len(units)-1 {
		f, u = f/1000, u+1
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// Options configure a Handler.
type Options struct {
	// Runtime lists statements and workers and cancels. Required.
	Runtime planner.Runtime
	// Auth, when set, authenticates every request as the Flight service
	// does; nil serves everyone (authentication is off).
	Auth *auth.Authenticator
	// Policy says who is an admin (nil: everyone, authentication is off).
	Policy *authz.Policy
}

// Validate reports every problem with o.
func (o Options) Validate() error {
	if o.Runtime == nil {
		return errors.New("status: Runtime is required")
	}
	return nil
}

// Handler serves the status page.
type Handler struct {
	o      Options
	secret []byte // keys the cancel tokens
	mux    *http.ServeMux
	authed http.Handler // serve behind o.Auth
}

// New returns the status page's handler.
func New(o Options) (*Handler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{o: o, secret: make([]byte, 32), mux: http.NewServeMux()}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, err
	}
	h.mux.HandleFunc("GET /{$}", h.page)
	h.mux.HandleFunc("POST /cancel", h.cancel)
	h.authed = o.Auth.Handler(http.HandlerFunc(h.serve))
	return h, nil
}

// ServeHTTP serves the page and its cancels, behind the Flight service's
// authentication.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.authed.ServeHTTP(w, r) }

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r)
}

// token is the cancel token of principal: only a page served to it
// carries it.
func (h *Handler) token(principal string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("cancel\x00" + principal))
	return hex.EncodeToString(m.Sum(nil))
}

type view struct {
	Principal string
	Admin     bool
	Token     string
	Now       time.Time
	Queries   []queryreg.Info
	Workers   []planner.RuntimeWorker
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	me, admin := auth.Name(ctx), h.o.Policy.Admin(ctx)
	v := view{Principal: me, Admin: admin, Token: h.token(me), Now: time.Now().UTC()}
	for _, q := range h.o.Runtime.Queries(ctx) {
		if admin || q.Principal == me {
			v.Queries = append(v.Queries, q)
		}
	}
	if admin {
		v.Workers = h.o.Runtime.Workers(ctx)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := page.Execute(w, v); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
	}
}

// sameOrigin says whether a POST comes from a page of this listener:
// browsers send Origin (or Sec-Fetch-Site) with every POST.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	me, admin := auth.Name(ctx), h.o.Policy.Admin(ctx)
	if !sameOrigin(r) || !hmac.Equal([]byte(r.PostFormValue("token")), []byte(h.token(me))) {
		http.Error(w, "cancel refused: it must come from the status page", http.StatusForbidden)
		return
	}
	_, err := h.o.Runtime.CancelQuery(ctx, r.PostFormValue("query_id"), func(p string) bool { return admin || p == me })
	switch {
	case errors.Is(err, queryreg.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case errors.Is(err, queryreg.ErrNotYours):
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	// A worker not told ends the query's streams at the tickets' expiry.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
