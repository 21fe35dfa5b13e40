# syntax=docker/dockerfile:1
#
# icefloe in one image: `docker build -t icefloe .` (or `make docker`), then
#   docker run --rm --network host icefloe
# serves the demo tables on 0.0.0.0:32010 (data in /var/lib/icefloe; mount a
# volume there to keep it). Other roles: docker run icefloe coordinator|worker ...
#
# The image is FROM scratch: the binary, the libraries it links, CA
# certificates and the icefloe user, laid out by scripts/image-rootfs.
# Where no registry is reachable, `make image` builds the same final stage
# with buildah from a root filesystem made on the host (named context
# "rootfs", so the build stage is skipped).

# ---- build ----------------------------------------------------------------
FROM golang:1.26-bookworm AS build
WORKDIR /src
# DuckDB is C++ behind cgo.
ENV CGO_ENABLED=1

# Modules first: this layer is reused until go.mod or go.sum changes.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -tags duckdb_arrow -trimpath -ldflags="-s -w" -o /out/icefloe ./cmd/icefloe \
 && scripts/image-rootfs /out/icefloe /rootfs

FROM scratch AS rootfs
COPY --from=build /rootfs/ /

# ---- run ------------------------------------------------------------------
FROM scratch
COPY --from=rootfs / /
USER 10001:10001
WORKDIR /var/lib/icefloe
ENV HOME=/var/lib/icefloe TMPDIR=/tmp
EXPOSE 32010
ENTRYPOINT ["/usr/local/bin/icefloe"]
CMD ["serve", "--listen", "0.0.0.0:32010", "--data-dir", "/var/lib/icefloe", "--demo"]
