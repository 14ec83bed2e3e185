// The layers' boundaries (docs/architecture.md), checked by `make lint-deps` as part of `make test`:
//   src/actors   the domain: pure, imports nothing of the engine, the use cases or the outside world
//   src/runtime  the engine: threads, shards, journal, cluster; never the use cases or the API edges
//   src/app      the use cases: never an API edge (REST or gRPC): both edges call them
//   src/io/grpc and src/io/events never import src/io/http: what two edges need lives below both
//   database drivers only under src/io/db (SQL lives there too: test/boundaries.test.ts)
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'actors-are-pure',
      comment: 'src/actors is the domain: no io, runtime or app',
      severity: 'error',
      from: { path: '^src/actors/' },
      to: { path: '^src/(io|runtime|app)/' },
    },
    {
      name: 'runtime-is-the-engine',
      comment: 'src/runtime holds the engine: it calls no use case and no API edge',
      severity: 'error',
      from: { path: '^src/runtime/' },
      to: { path: '^src/(app|io/http|io/grpc|io/events|io/webhooks|io/mail)/' },
    },
    {
      name: 'use-cases-below-the-edges',
      comment: 'src/app is called by REST and gRPC alike: it imports neither',
      severity: 'error',
      from: { path: '^src/app/' },
      to: { path: '^src/io/(http|grpc)/' },
    },
    {
      name: 'grpc-and-events-not-through-http',
      comment: 'what gRPC or the event streams share with REST lives below both',
      severity: 'error',
      from: { path: '^src/io/(grpc|events)/' },
      to: { path: '^src/io/http/' },
    },
    {
      name: 'drivers-only-in-io-db',
      comment: 'PostgreSQL and PGlite are reached through src/io/db only',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/io/db/' },
      to: { path: 'node_modules/(pg|pg-listen|@electric-sql/pglite)/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle between modules makes their order of loading matter (types alone do not load anything)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|dist|ui|clients)/' },
  },
};
