import { END, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';

/**
 * `drafts`: a graph whose state is a zod schema. Its JSON schemas come from the schema itself, exactly: field types,
 * defaults and the `.describe()` texts reach `GET /assistants/drafts/schemas` (`client.assistants.getSchemas`), which
 * the design studio and schema-driven forms read. (A graph over an `Annotation` state gets one untyped property per
 * channel instead.)
 *
 *   START → write → END
 */
export const DraftState = z.object({
  topic: z.string().describe('What the draft is about'),
  draft: z.string().default('').describe('The text written so far'),
  words: z.number().int().default(0).describe('How many words the draft has'),
});
type Draft = z.infer<typeof DraftState>;

function write(state: Draft): Partial<Draft> {
  const draft = `A short note about ${state.topic.trim() || 'nothing in particular'}.`;
  return { draft, words: draft.split(/\s+/).length };
}

export const drafts = new StateGraph(DraftState)
  .addNode('write', write)
  .addEdge(START, 'write')
  .addEdge('write', END)
  .compile();

drafts.name = 'drafts';
