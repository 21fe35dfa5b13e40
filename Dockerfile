# syntax=docker/dockerfile:1
#
# icefloe in one image: `docker build -t icefloe .` (or `make docker`), then
#   docker run --rm --network host icefloe
# serves the demo tables on 0.0.0.0:32010 (data in /var/lib/icefloe; mount a
# volume there to keep it). Other roles: docker run icefloe coordinator|worker ...

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
    go build -tags duckdb_arrow -trimpath -ldflags="-s -w" -o /out/icefloe ./cmd/icefloe

# ---- run ------------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libstdc++6 \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 icefloe \
 && useradd --system --uid 10001 --gid icefloe --home-dir /var/lib/icefloe \
      --no-create-home --shell /usr/sbin/nologin icefloe \
 && mkdir -p /var/lib/icefloe \
 && chown icefloe:icefloe /var/lib/icefloe

COPY --from=build /out/icefloe /usr/local/bin/icefloe

USER 10001:10001
WORKDIR /var/lib/icefloe
EXPOSE 32010
ENTRYPOINT ["/usr/local/bin/icefloe"]
CMD ["serve", "--listen", "0.0.0.0:32010", "--data-dir", "/var/lib/icefloe", "--demo"]
