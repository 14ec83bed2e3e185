// The SDK's hand-written types (clients/typescript/src/types.ts) checked against the component schemas of the
// OpenAPI document (clients/typescript/src/openapi.ts, generated from it). Compiling this file is the check:
// `make typecheck` does, and so does test/openapi.test.ts. For each pair:
// - every field the document gives is named in the SDK type (a field added to an answer fails here until the
//   SDK knows it), and every field the SDK names is documented, unless listed as filled in by the client;
// - what the document says a field holds is accepted by the SDK's type for it (required stays required).
import type { ErrorBody } from '../clients/typescript/src/errors.js';
import type { components } from '../clients/typescript/src/openapi.js';
import type * as Sdk from '../clients/typescript/src/types.js';

type Doc = components['schemas'];

/** The named fields of T, without its index signature. */
type Named<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

/**
 * `true` when S (the SDK's type) matches D (the document's), else a description of the differences, which the
 * compiler prints. `ClientOnly`: fields the client fills in itself.
 */
type Conforms<S, D, ClientOnly extends string = never> = Check<Without<S, ClientOnly>, D, ClientOnly>;
type Check<S, D, ClientOnly extends string> = [
  Exclude<Named<D>, Named<S>>,
  Exclude<Named<S>, Named<D> | ClientOnly>,
  D extends S ? true : false,
] extends [never, never, true]
  ? true
  : {
      undocumented_in_sdk: Exclude<Named<D>, Named<S>>;
      not_in_document: Exclude<Named<S>, Named<D> | ClientOnly>;
      document_fits_sdk: D extends S ? true : { [K in keyof D & keyof S]: D[K] extends S[K] ? never : K }[keyof D & keyof S];
    };

/** S without the fields the client fills in (its index signature kept, which Omit would not). */
type Without<S, K extends string> = { [P in keyof S as P extends K ? never : P]: S[P] };

/** The SDK's request type names only fields the request body documents. */
type Sends<S, D> = Exclude<Named<S>, Named<D>> extends never ? true : { not_in_document: Exclude<Named<S>, Named<D>> };

type Body<Op extends keyof import('../clients/typescript/src/openapi.js').operations> = NonNullable<
  import('../clients/typescript/src/openapi.js').operations[Op]['requestBody']
>['content']['application/json'];

export const checks: Record<string, true> = {
  Error: true satisfies Conforms<ErrorBody, Doc['Error']>,
  Job: true satisfies Conforms<Sdk.Job, Doc['Job']>,
  EnqueuedJob: true satisfies Conforms<Sdk.EnqueuedJob, Doc['CreatedJob']>,
  BulkResult: true satisfies Conforms<Sdk.BulkResult, Doc['BulkResult']>,
  CompleteReply: true satisfies Conforms<Sdk.CompleteReply, Doc['JobCompleted']>,
  AckResult: true satisfies Conforms<Sdk.AckResult, Doc['AckResult']>,
  FailReply: true satisfies Conforms<Sdk.FailReply, Doc['JobFailed']>,
  HeartbeatReply: true satisfies Conforms<Sdk.HeartbeatReply, Doc['LeaseExtended']>,
  JobExplanation: true satisfies Conforms<Sdk.JobExplanation, Doc['JobExplanation']>,
  JobStats: true satisfies Conforms<Sdk.JobStats, Doc['JobStats']>,
  JobStatusLine: true satisfies Conforms<Sdk.JobStatusLine, Doc['JobStatusLine']>,
  JobDependencies: true satisfies Conforms<Sdk.JobDependencies, Doc['JobDependencies']>,
  DashboardOverview: true satisfies Conforms<Sdk.DashboardOverview, Doc['DashboardOverview']>,
  DlqRetryResult: true satisfies Conforms<Sdk.DlqRetryResult, Doc['DlqRetryResult']>,
  Queue: true satisfies Conforms<Sdk.Queue, Doc['Queue']>,
  QueueStats: true satisfies Conforms<Sdk.QueueStats, Doc['QueueStats']>,
  WorkerRecord: true satisfies Conforms<Sdk.WorkerRecord, Doc['Worker']>,
  Schedule: true satisfies Conforms<Sdk.Schedule, Doc['Schedule']>,
  ScheduleRun: true satisfies Conforms<Sdk.ScheduleRun, Doc['ScheduleRun']>,
  TriggeredRun: true satisfies Conforms<Sdk.TriggeredRun, Doc['TriggeredRun']>,
  WorkflowSummary: true satisfies Conforms<Sdk.WorkflowSummary, Doc['WorkflowSummary']>,
  Workflow: true satisfies Conforms<Sdk.Workflow, Doc['Workflow']>,
  OutgoingWebhook: true satisfies Conforms<Sdk.OutgoingWebhook, Doc['OutgoingWebhook']>,
  Delivery: true satisfies Conforms<Sdk.Delivery, Doc['Delivery']>,
  TestDelivery: true satisfies Conforms<Sdk.TestDelivery, Doc['TestDelivery']>,
  ApiKey: true satisfies Conforms<Sdk.ApiKey, Doc['ApiKey']>,
  CreatedApiKey: true satisfies Conforms<Sdk.CreatedApiKey, Doc['CreatedApiKey']>,
  Tokens: true satisfies Conforms<Sdk.Tokens, Doc['Tokens']>,
  Me: true satisfies Conforms<Sdk.Me, Doc['Me']>,
  Usage: true satisfies Conforms<Sdk.Usage, Doc['Usage']>,
  WebhookToken: true satisfies Conforms<Sdk.WebhookToken, Doc['WebhookToken']>,
  Organization: true satisfies Conforms<Sdk.Organization, Doc['Organization']>,
  CreatedOrganization: true satisfies Conforms<Sdk.CreatedOrganization, Doc['CreatedOrganization']>,
  JobDefinition: true satisfies Sends<Sdk.JobDefinition, Body<'enqueueJob'>>,
  ClaimRequest: true satisfies Sends<Sdk.ClaimRequest, Body<'claimJobs'>>,
  DlqPurgeRequest: true satisfies Sends<Sdk.DlqPurgeRequest, Body<'purgeDeadLetterJobs'>>,
  WorkerRegistration: true satisfies Sends<Sdk.WorkerRegistration, Body<'registerWorker'>>,
  ScheduleDefinition: true satisfies Sends<Sdk.ScheduleDefinition, Body<'createSchedule'>>,
  ScheduleUpdate: true satisfies Sends<Sdk.ScheduleUpdate, Body<'updateSchedule'>>,
  WorkflowDefinition: true satisfies Sends<Sdk.WorkflowDefinition, Body<'createWorkflow'>>,
  WorkflowJobDefinition: true satisfies Sends<Sdk.WorkflowJobDefinition, Body<'createWorkflow'>['jobs'][number]>,
  ApiKeyUpdate: true satisfies Sends<Sdk.ApiKeyUpdate, Body<'updateApiKey'>>,
  OutgoingWebhookDefinition: true satisfies Sends<Sdk.OutgoingWebhookDefinition, Body<'createOutgoingWebhook'>>,
  OutgoingWebhookUpdate: true satisfies Sends<Sdk.OutgoingWebhookUpdate, Body<'updateOutgoingWebhook'>>,
  OrganizationDefinition: true satisfies Sends<Sdk.OrganizationDefinition, Body<'createOrganization'>>,
};
