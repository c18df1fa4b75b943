/**
 * The gate's compare rules: api-smart-diff's own OpenAPI rules (`openapi3Rules`), with the two things
 * they lack for this interface added in the tool's own rule mechanism (CrawlRules of classifiers),
 * not in a differ of ours (docs/decisions/0062-breaking-change-gate.md):
 *
 * - Extensible enums. An enum marked `x-extensible-enum: true` is a list the service may grow
 *   without a new date version (error codes, webhook event types): clients are told to treat an
 *   unknown value as the documented fallback (docs/guides/03-errors.md). The stock rules call a
 *   value added to a response enum breaking; here it is non-breaking when the new document marks
 *   the enum extensible. A value removed from a request enum stays breaking, marked or not.
 * - Response headers made required. The stock rules judge a header's `required` alike in requests
 *   and responses, so marking an answer's header `required` (a promise that it is always sent) came
 *   out breaking. For a response header it is the reverse: made required is non-breaking, made
 *   optional (or dropped) is breaking, since a client may rely on it.
 * - Webhooks. The stock rules know `paths` only, so an event payload's change came out
 *   "unclassified". An event's body is read by the subscriber, so it is judged like a response:
 *   a removed property or a widened type breaks, an added optional property does not; a removed
 *   event type breaks, a new one does not.
 */
import {
  allBreaking,
  breaking,
  type ClassifyRule,
  type ComapreContext,
  type CompareRule,
  type CompareRules,
  type DiffType,
  getParentContext,
  nonBreaking,
  openApiSchemaRules,
  openapi3Rules,
  transformComapreRules,
} from 'api-smart-diff';

/** The marker of an enum the service may grow (spec/README.md, "Conventions"). */
export const EXTENSIBLE_ENUM = 'x-extensible-enum';

const VERSION = '3.1.x' as const;

/** The schema holding an enum item: the item's parent is the `enum` array, whose parent is the schema. */
function extensibleInAfter(ctx: ComapreContext): boolean {
  const schema = getParentContext(ctx.after, '');
  const value = schema?.value as Record<string, unknown> | undefined;
  return value?.[EXTENSIBLE_ENUM] === true;
}

/** An added enum value is non-breaking in an enum the new document marks extensible; otherwise as the stock rule says. */
function growableEnumItem(stock: ClassifyRule): ClassifyRule {
  const [add, ...rest] = stock;
  const addRule = (ctx: ComapreContext): DiffType => {
    if (extensibleInAfter(ctx)) return nonBreaking;
    return typeof add === 'function' ? add(ctx) : (add as DiffType);
  };
  return [addRule, ...rest] as ClassifyRule;
}

/** Rewrites every schema rule's `/enum` item classifier; the marker itself is an annotation. */
function withExtensibleEnums(rule: CompareRules): CompareRules {
  const record = rule as Record<string, CompareRule & Record<string, unknown>>;
  const enumRule = record['/enum'];
  if (!enumRule || typeof enumRule !== 'object') return rule;
  const item = enumRule['/*'] as CompareRule | undefined;
  if (!item?.$) return rule;
  return {
    ...rule,
    '/enum': { ...enumRule, '/*': { ...item, $: growableEnumItem(item.$) } },
    [`/${EXTENSIBLE_ENUM}`]: { $: [nonBreaking, nonBreaking, nonBreaking] },
  } as CompareRules;
}

/** Rules for the `webhooks` section: each event's request body is what the subscriber reads. */
function webhookRules(): CompareRules {
  const payload = openApiSchemaRules({ version: VERSION, response: true });
  const body = { $: allBreaking, ...payload };
  return {
    $: [nonBreaking, breaking, breaking],
    '/*': {
      $: [nonBreaking, breaking, breaking],
      '/*': {
        $: [nonBreaking, breaking, breaking],
        '/requestBody': {
          $: [breaking, breaking, breaking],
          '/content': {
            $: [nonBreaking, breaking, breaking],
            '/*': { $: [nonBreaking, breaking, breaking], '/schema': () => body },
          },
        },
      },
    },
  } as CompareRules;
}

/** A response header's `required`: true → false, or removed, breaks a client relying on the header. */
const responseHeaderRequired: ClassifyRule = [nonBreaking, breaking, ({ after }: ComapreContext) => (after.value === true ? nonBreaking : breaking)];

type RuleTree = Record<string, unknown>;

/** A copy of `tree` with the rule at `keys` replaced by `change(rule)`; the tool's own objects are left as they are. */
function replaced(tree: RuleTree, keys: readonly string[], change: (rule: RuleTree) => RuleTree): RuleTree {
  const [key, ...rest] = keys;
  if (key === undefined) return change(tree);
  const child = tree[key];
  if (!child || typeof child !== 'object') throw new Error(`api-smart-diff's rules have no ${keys.join('')}: the gate's rules need updating`);
  return { ...tree, [key]: replaced(child as RuleTree, rest, change) };
}

const withRequiredResponseHeaders = (responses: RuleTree): RuleTree =>
  replaced(responses, ['/*', '/headers', '/*', '/required'], (rule) => ({ ...rule, $: responseHeaderRequired }));

/** api-smart-diff's OpenAPI 3.1 rules with the interface's additions. */
export function gateRules(): CompareRules {
  let rules = openapi3Rules({ version: VERSION }) as RuleTree;
  rules = replaced(rules, ['/paths', '/*', '/*', '/responses'], withRequiredResponseHeaders);
  rules = replaced(rules, ['/components', '/responses', '/*'], withRequiredResponseHeaders);
  rules = { ...rules, '/webhooks': webhookRules() };
  return transformComapreRules(rules as CompareRules, withExtensibleEnums);
}
