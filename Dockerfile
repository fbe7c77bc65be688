# syntax=docker/dockerfile:1
# Multi-stage build: a static binary on a distroless base.
FROM golang:1.27-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/footprint ./cmd/server

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/footprint /footprint
ENV FOOTPRINT_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/footprint"]
