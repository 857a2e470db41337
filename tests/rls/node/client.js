// A Node client of Sluice's Envoy rate limit service, on @grpc/grpc-js and @grpc/proto-loader,
// loading the repository's own proto files. Usage: node client.js PORT PROTO_DIR CLIENT_ID
// Expects the descriptors of tests/rls/rls_service_test.cc (domain "edge", client: 3 a minute).
'use strict';

const path = require('path');
const assert = require('assert');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const [port, protoDir, clientId] = process.argv.slice(2);
const options = { keepCase: true, longs: Number, enums: String, defaults: true, includeDirs: [protoDir] };
const load = (file) => grpc.loadPackageDefinition(protoLoader.loadSync(path.join(protoDir, file), options));

const rls = load('envoy/service/ratelimit/v3/rls.proto').envoy.service.ratelimit.v3;
const health = load('grpc/health/v1/health.proto').grpc.health.v1;
const address = `127.0.0.1:${port}`;
const limiter = new rls.RateLimitService(address, grpc.credentials.createInsecure());
const checker = new health.Health(address, grpc.credentials.createInsecure());

const call = (client, method, request) =>
  new Promise((resolve) => {
    const deadline = new Date(Date.now() + 5000);
    client[method](request, { deadline }, (error, response) => resolve({ error, response }));
  });

const descriptor = (entries) => ({ entries: entries.map(([key, value]) => ({ key, value })) });

async function main() {
  let checks = 0;
  const served = await call(checker, 'Check', { service: '' });
  assert.ifError(served.error);
  assert.strictEqual(served.response.status, 'SERVING');
  checks++;

  const codes = [];
  for (let i = 0; i < 4; i++) {
    const { error, response } = await call(limiter, 'ShouldRateLimit', {
      domain: 'edge',
      descriptors: [descriptor([['client', clientId]])],
    });
    assert.ifError(error);
    const status = response.statuses[0];
    assert.strictEqual(status.current_limit.requests_per_unit, 3);
    assert.strictEqual(status.current_limit.unit, 'MINUTE');
    assert.strictEqual(status.limit_remaining, Math.max(0, 2 - i));
    codes.push(response.overall_code);
  }
  assert.deepStrictEqual(codes, ['OK', 'OK', 'OK', 'OVER_LIMIT']);
  checks++;

  const empty = await call(limiter, 'ShouldRateLimit', { domain: '', descriptors: [descriptor([['client', 'x']])] });
  assert.strictEqual(empty.error && empty.error.code, grpc.status.INVALID_ARGUMENT);
  checks++;

  const unmatched = await call(limiter, 'ShouldRateLimit', {
    domain: 'edge',
    descriptors: [descriptor([['nobody', 'x']])],
  });
  assert.ifError(unmatched.error);
  assert.strictEqual(unmatched.response.overall_code, 'OK');
  assert.strictEqual(unmatched.response.statuses[0].current_limit, null);
  checks++;

  console.log(`node client: ${checks} checks passed`);
}

main()
  .then(() => process.exit(0))
  .catch((error) => {
    console.error(error);
    process.exit(1);
  });
