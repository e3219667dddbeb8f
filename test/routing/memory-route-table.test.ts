import { MemoryRouteTable } from '../../src/routing/memory-route-table.ts';
import { routeTableContract } from './contract.ts';

routeTableContract('memory', async () => {
  const table = new MemoryRouteTable();
  return { table, ready: async () => {}, close: () => table.close() };
});
