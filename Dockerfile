# The shardsim image for deploy/k8s-sweep.sh: the release binary and the shipped scenarios.
#   docker build -t REGISTRY/shardsim:0.1.0 . && docker push REGISTRY/shardsim:0.1.0
FROM rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin shardsim

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home shardsim
COPY --from=build /src/target/release/shardsim /usr/local/bin/shardsim
COPY --from=build /src/scenarios /opt/shardsim/scenarios
# Scenario paths are the repository's (scenarios/…), relative to here.
WORKDIR /opt/shardsim
USER 10001
ENTRYPOINT ["shardsim"]
CMD ["--help"]
