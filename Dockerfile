# The sidecar cmd/a2a-idempotency-proxy as an image:
#
#   docker build -t a2a-idempotency-proxy --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run -p 8090:8090 -p 8091:8091 -v keys:/data \
#     -e IDEMPOTENCY_UPSTREAM=http://agent:8080 -e IDEMPOTENCY_PUBLIC_URL=https://agents.example.com a2a-idempotency-proxy
#
# Every flag is also an environment variable (IDEMPOTENCY_<FLAG>); the image sets the
# listeners to all interfaces, JSON logs, and a SQLite key store in the volume /data.
# For PostgreSQL, -e IDEMPOTENCY_STORE=postgres://… (keep the DSN out of the command
# line). It runs as the unprivileged user 65532. cmd/a2a-idempotency-proxy's
# TestDockerEntrypoint runs this file's build line and entrypoint where docker is
# unavailable.

# Build: SQLite needs cgo, so the binary links glibc, and the runtime image has it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/a2a-idempotency-proxy ./cmd/a2a-idempotency-proxy && \
    mkdir -p /out/data

# Run: distroless with glibc, no shell, non-root.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/a2a-idempotency-proxy /usr/local/bin/a2a-idempotency-proxy
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
ENV IDEMPOTENCY_LISTEN=0.0.0.0:8090 \
    IDEMPOTENCY_ADMIN=0.0.0.0:8091 \
    IDEMPOTENCY_STORE=/data/idempotency-proxy.db \
    IDEMPOTENCY_LOG_FORMAT=json
EXPOSE 8090 8091
ENTRYPOINT ["/usr/local/bin/a2a-idempotency-proxy"]
