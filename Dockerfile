# syntax=docker/dockerfile:1
# graft's image with Docker: the same image `make images` writes without
# one (internal/ociimage/graftimage defines it): one static binary, the
# numeric non-root user 65532, no shell or package manager to exploit.
# `make image` builds it. deploy/dockerfile_test.go runs this file's
# `go build` command verbatim and holds its final stage to graftimage's
# user, entrypoint, command, ports and labels, so what CI tests is what
# ships.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Cross-compiled on the build platform for the target one (no emulation).
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/graft ./cmd/graft
# The image's files, laid out by the same code as make images's layer.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go run ./internal/ociimage/cmd/graft-image rootfs --binary /out/graft --out /out/rootfs

FROM scratch
COPY --from=build /out/rootfs/ /
USER 65532:65532
EXPOSE 8443/tcp 8080/tcp
LABEL org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/graftdev/graft" \
      org.opencontainers.image.title="graft"
ENTRYPOINT ["/graft"]
CMD ["serve"]
