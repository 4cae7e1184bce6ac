# syntax=docker/dockerfile:1
# graft's image: one static binary on distroless, run as a non-root user,
# with no shell or package manager to exploit. `make image` builds it.
# deploy/dockerfile_test.go runs this file's `go build` command verbatim, so
# what CI tests is what ships.

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

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/graft /graft
# distroless's nonroot user, numerically so runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/graft"]
CMD ["serve"]
