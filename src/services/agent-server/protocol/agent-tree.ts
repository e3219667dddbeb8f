import type { AgentStatus, AgentTreeNode, Namespace } from '@langchain/protocol';

/**
 * The agent tree of a thread's current run (`agent.getTree`): the root graph and every subgraph namespace its
 * lifecycle events named, with their last status. Segments after `:` are task ids (`model:<uuid>`): a node without
 * its own lifecycle event takes the part before as its graph name.
 */
export class AgentTree {
  private readonly nodes = new Map<string, { namespace: Namespace; status: AgentStatus; graphName: string }>();

  constructor(private rootName = 'root') {}

  reset(rootName: string): void {
    this.rootName = rootName;
    this.nodes.clear();
  }

  set(namespace: Namespace, status: AgentStatus, graphName?: string): void {
    for (let i = 1; i < namespace.length; i++) {
      const parent = namespace.slice(0, i);
      if (!this.nodes.has(key(parent)))
        this.nodes.set(key(parent), { namespace: parent, status: 'started', graphName: nameOf(parent) });
    }
    const existing = this.nodes.get(key(namespace));
    this.nodes.set(key(namespace), {
      namespace,
      status,
      graphName: graphName ?? existing?.graphName ?? (namespace.length === 0 ? this.rootName : nameOf(namespace)),
    });
  }

  tree(namespace: Namespace = []): AgentTreeNode {
    const node = this.nodes.get(key(namespace));
    const children = [...this.nodes.values()]
      .filter((n) => n.namespace.length === namespace.length + 1 && namespace.every((s, i) => n.namespace[i] === s))
      .sort((a, b) => key(a.namespace).localeCompare(key(b.namespace)))
      .map((n) => this.tree(n.namespace));
    return {
      namespace,
      status: node?.status ?? 'started',
      graph_name: node?.graphName ?? (namespace.length === 0 ? this.rootName : nameOf(namespace)),
      ...(children.length > 0 ? { children } : {}),
    };
  }
}

const key = (namespace: Namespace) => JSON.stringify(namespace);
const nameOf = (namespace: Namespace) => namespace.at(-1)!.split(':')[0]!;
