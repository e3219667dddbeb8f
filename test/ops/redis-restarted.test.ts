import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keysByPrefix } from '../helpers/redis-keys.ts';
import { startRedisOnPort } from '../../support/redis-server.ts';
import { kill9, useRedisOutageFixture } from '../helpers/redis-outage.ts';
import { metrics } from '../helpers/redis-outage-measure.ts';
import { send, smallBucketThrough, untilRedisDecides } from '../helpers/redis-outage-probes.ts';
import { metricValue } from '../helpers/scrape-metrics.ts';

/**
 * The gateway's private Redis killed, then started again on the same port: the edge reconnects by itself. The setup is
 * explained in test/helpers/redis-outage.ts.
 */

const { redisAndGateway, track } = useRedisOutageFixture();

describe('Redis restarted on the same port', () => {
  it('the edge reconnects by itself and limits from the new Redis again', async () => {
    const { redis, gw } = await redisAndGateway({ FAIL_MODE: 'open' });
    expect(await smallBucketThrough([gw, gw, gw, gw, gw])).toEqual({
      statuses: [200, 200, 200, 200, 429],
      fellBack: false,
    });

    await kill9(redis);
    for (let i = 0; i < 6; i++) {
      expect((await send(gw, '/wide', `down-${i}`, `down-${i}`)).status).toBe(200);
      expect((await gw.logs.requestLine(`down-${i}`)).fellBack).toBe(true);
    }
    expect(metricValue(await metrics(gw), 'gateway_store_breaker_state')).toBe(2);

    const again = await startRedisOnPort(redis.port);
    track(again);
    // ioredis reconnects by itself (its backoff is at most 2 s); the breaker's next probe closes the circuit.
    await untilRedisDecides(gw, 6000);

    expect(await smallBucketThrough([gw, gw, gw, gw, gw])).toEqual({
      statuses: [200, 200, 200, 200, 429],
      fellBack: false,
    });
    const client = new Redis({ host: '127.0.0.1', port: again.port, maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      expect((await keysByPrefix(client, 'rl:us:small:')).length).toBeGreaterThanOrEqual(1);
    } finally {
      client.disconnect();
    }
  });
});
