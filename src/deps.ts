import path from 'node:path';
import type { Deps } from './deps-types.js';
import type { Config } from './config.js';
import { closedRanges } from './platform/net/index.js';
import { OutboundGuard } from './platform/outbound/index.js';
import { AccountService } from './resources/accounts/index.js';
import { fileMountsStep } from './resources/devboxes/index.js';
import { DevboxService } from './resources/devboxes/index.js';
import { Lifecycle } from './resources/devboxes/index.js';
import { StatusEvents } from './resources/devboxes/index.js';
import { Supervisor } from './resources/devboxes/index.js';
import { DEVBOX_STATUSES, TERMINAL } from './resources/devboxes/index.js';
import { BoxJobs } from './resources/executions/index.js';
import { executionExtensions } from './resources/executions/index.js';
import { DevboxLog } from './resources/executions/index.js';
import { ExecutionService } from './resources/executions/index.js';
import { OutputBudget } from './resources/executions/index.js';
import { OutputStorage } from './resources/executions/index.js';
import { openBlobStore } from './platform/blob/open.js';
import { FileService } from './resources/files/index.js';
import { buildAgentGateway, GATEWAY_PREFIX } from './resources/gateway-configs/index.js';
import { secretExtensions } from './resources/secrets/index.js';
import { openKeySource } from './platform/sealing/master-key.js';
import { SecretService } from './resources/secrets/index.js';
import { Sealer } from './platform/sealing/sealer.js';
import { buildMcp } from './resources/mcp-configs/index.js';
import { snapshotLayersResolver, snapshotShutdownGuard } from './resources/snapshots/index.js';
import { JobRunner } from './platform/jobs/job-runner.js';
import { CAPTURE_JOB, SnapshotService } from './resources/snapshots/index.js';
import { RESUME_JOB, SUSPEND_JOB, SuspendService } from './resources/snapshots/index.js';
import { Gate } from './lib/gate.js';
import { egressSettings } from './network-config.js';
import { BoxServices, boxServicesUrl } from './platform/boxlink/index.js';
import { boxServicesExtensions } from './resources/devboxes/index.js';
import type { Logger } from './lib/logger.js';
import type { RuntimeDriver } from './runtime/driver.js';
import { createRuntime } from './runtime/index.js';
import { openStore } from './resources/core-store.js';
import { MODULE_SCHEMAS } from './resources/index.js';
import { networkPolicyExtensions, TUNNEL_PREFIX } from './resources/network-policies/index.js';
import { NetworkPolicyService } from './resources/network-policies/index.js';
import { TunnelFront, TunnelService, WAKE_TIMEOUT_MS } from './resources/tunnels/index.js';
import { BUILD_JOB, buildBlueprints, SERVICE_PULL_QUEUE, serviceBootStep } from './resources/blueprints/index.js';
import { PtyFront, PtySessions, PtyTunnels, ptyStopListener } from './resources/pty/index.js';
import { objectMountExtensions, placeObject } from './resources/objects/index.js';
import { EXPIRE_JOB, ObjectService } from './resources/objects/index.js';
import { Presigner } from './resources/objects/index.js';
import { LoginGuard, SqlSshKeyStore, SshFront, SshKeyService } from './resources/ssh/index.js';
import { buildEvictions } from './resources/evictions/index.js';
import { buildRepositories, GIT_PREFIX, INSPECT_JOB } from './resources/repositories/index.js';
import { resolveLimits } from './resources/devboxes/index.js';
import { agentMountExtensions, AgentService } from './resources/agents/index.js';
import { buildAxons } from './resources/axons/index.js';
import { buildScenarios, SCORE_JOB } from './resources/scenarios/index.js';
import { buildBenchmarks, RUN_JOB } from './resources/benchmarks/index.js';
import { BENCHMARK_JOB, wireBenchmarkJobs } from './deps-benchmark-jobs.js';

export type { Deps } from './deps-types.js';

/** `runtime` replaces the shipped driver (fast tests pass a stub; never the server itself). */
export async function buildDeps(config: Config, logger: Logger, opts: { runtime?: RuntimeDriver } = {}): Promise<Deps> {
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, modules: MODULE_SCHEMAS });
  // The blob store (local files or S3) is opened before anything runs: an unreachable bucket stops the start here.
  const blobs = await openBlobStore(config.blob, config.dataDir, logger.child({ component: 'blobs' }));
  const node = config.nodeName;
  // The one gate of every connection opened for a tenant: gateway, MCP, registries, git.
  const outbound = new OutboundGuard({ allow: config.outboundAllow, boxSubnet: config.network.boxSubnet });
  const runtime =
    opts.runtime ??
    createRuntime({
      dataDir: config.dataDir,
      imageDir: config.imageDir,
      logger: logger.child({ component: 'runtime' }),
      maxCommandsPerBox: config.maxExecutionsPerDevbox,
      maxCommands: config.maxExecutions,
      egress: config.network.enabled ? egressSettings(config.network) : undefined,
      registry: {
        defaultRegistry: config.registry.defaultRegistry,
        insecure: config.registry.insecure,
        allow: config.registry.allow,
        outbound,
        limits: { maxLayerBytes: config.registry.maxLayerBytes, maxUnpackedBytes: config.registry.maxUnpackedBytes },
      },
    });
  await runtime.prepare();

  const accounts = new AccountService(store);
  const keyLog = logger.child({ component: 'secrets' });
  const keys = openKeySource({ dataDir: config.dataDir, secretKey: config.secretKey, previousKeys: config.secretKeyPrevious, warn: (msg) => keyLog.warn(msg) });
  const sealer = new Sealer(keys);
  const secrets = new SecretService(store, sealer, logger.child({ component: 'secrets' }));
  await secrets.checkKeys();
  const secretsForBoxes = secretExtensions(secrets, store, logger.child({ component: 'secrets' }));
  const mcp = buildMcp({ store, secrets, sealer, hubUrl: `${boxServicesUrl(config)}/mcp`, outbound, log: logger.child({ component: 'mcp-hub' }) });
  const idempotency = store.idempotency;
  const events = new StatusEvents();
  const devboxStore = store.devboxes;
  // Features plug into the devbox core through its extension points; services built later are reached by
  // thunks (called only once a box boots or a request arrives, when everything below exists).
  const boxProcesses = executionExtensions(() => executions.processes);
  const networkPolicies = new NetworkPolicyService(
    store,
    node,
    logger.child({ component: 'network-policies' }),
    () => egress.changed,
    closedRanges({ subnet: config.network.boxSubnet, deny: config.network.egressDeny, privateAllow: config.network.egressPrivateAllow }),
  );
  const egress = networkPolicyExtensions({
    policies: () => networkPolicies,
    store: networkPolicies.policies,
    runtime,
    config: config.network,
    log: logger.child({ component: 'egress' }),
  });
  const boxServices = new BoxServices({
    runtime,
    dataDir: config.dataDir,
    port: config.boxServicesPort,
    log: logger.child({ component: 'box-services' }),
    // The git relay answers only a box holding a clone grant (code mounts, inspections), whatever its policy.
    allows: (box, prefix) => prefix === GIT_PREFIX || egress.allowsService(box, prefix),
  });
  boxServices.start();
  boxServices.route('/mcp', mcp.hub.handle);
  const boxLink = boxServicesExtensions(() => boxServices);
  const objectMounts = objectMountExtensions(() => objects, config.objects);
  const repositories = buildRepositories({
    store,
    sealer,
    runtime,
    boxServices: () => boxServices,
    servicesPort: config.boxServicesPort,
    jobs: () => jobs,
    config: config.repositories,
    limits: resolveLimits({}, { maxCpuCores: config.maxCpuCores, maxMemoryGiB: config.maxMemoryGiB }),
    blueprint: (accountId, id) => blueprints.store.get(accountId, id),
    outbound,
    log: logger.child({ component: 'repositories' }),
  });
  boxServices.route(GIT_PREFIX, repositories.relay.handle);
  // An object agent is placed the way object mounts are, reading the object as the agent's owner.
  const agentMounts = agentMountExtensions(
    () => agents,
    (ctx, owner, objectId, objectPath, deadline) => placeObject(objects, config.objects, ctx.sandbox, owner, objectId, objectPath, deadline),
    config.agents,
  );
  const gateway = buildAgentGateway(store, {
    secrets: () => secrets,
    sealer: () => sealer,
    baseUrl: boxServicesUrl(config),
    outbound,
    log: logger.child({ component: 'gateway' }),
  });
  boxServices.route(GATEWAY_PREFIX, gateway.proxy.handle);
  // The SSH front reaches the box services through thunks, called once a connection logs in.
  const sshKeys = new SshKeyService(() => devboxes, new SqlSshKeyStore(store.db), {
    served: config.ssh.onApiPort || config.ssh.port !== null || config.ssh.plainPort !== null,
    domain: config.ssh.domain ?? config.tunnelDomain,
    log: logger.child({ component: 'ssh' }),
  });
  const sshFront = new SshFront({
    config: config.ssh,
    domain: config.ssh.domain ?? config.tunnelDomain,
    dataDir: config.dataDir,
    devboxById: (id) => devboxStore.getById(id),
    sandboxOf: (id) => lifecycle.active.get(id)?.sandbox,
    environmentOf: (d) => devboxes.environmentOf(d),
    guard: new LoginGuard(),
    issuedKey: (id, accountId, blob) => sshKeys.issued(id, accountId, blob),
    busy: (id, delta) => devboxes.busy(id, delta),
    log: logger.child({ component: 'ssh' }),
  });
  const services = serviceBootStep({
    store: () => blueprints.store,
    runtime,
    sealer,
    readyTimeoutMs: config.serviceReadyTimeoutSeconds * 1000,
    node,
    pulls: new Gate(config.servicePulls, SERVICE_PULL_QUEUE),
    report: (devboxId, message) => devboxLog.write({ devboxId, timestampMs: Date.now(), level: 'error', source: 'entrypoint', message }),
    log: logger.child({ component: 'services' }),
  });
  const axons = buildAxons({
    store,
    dataDir: config.dataDir,
    config: config.axons,
    boxLog: (entry) => devboxLog.write(entry),
    devboxes: () => devboxes,
    resume: (accountId, id) => suspend.resume(accountId, id),
    environmentOf: (d) => devboxes.environmentOf(d),
    running: (id, sandbox) => lifecycle.active.get(id)?.sandbox === sandbox,
    log: logger.child({ component: 'axons' }),
  });
  const lifecycle = new Lifecycle(devboxStore, runtime, events, logger.child({ component: 'lifecycle' }), {
    // Services start before the launch commands, which may use them.
    bootSteps: [
      egress.bootStep,
      boxLink.bootStep,
      fileMountsStep,
      objectMounts.bootStep,
      agentMounts.bootStep,
      repositories.codeMounts.bootStep,
      services,
      boxProcesses.bootStep,
    ],
    onRunning: [boxProcesses.onRunning, axons.broker.onRunning],
    onStopped: [
      axons.broker.onStopped,
      egress.onStopped,
      boxLink.onStopped,
      boxProcesses.onStopped,
      mcp.devbox.onStopped,
      gateway.devbox.onStopped,
      (id) => evictions.service.stopped(id),
      sshFront.onStopped,
      sshKeys.onStopped,
      ptyStopListener(
        () => ptySessions,
        () => ptyTunnels,
        logger.child({ component: 'pty' }),
      ),
      (id, ended) => scenarios.onStopped(id, ended),
    ],
  });
  const tunnels = new TunnelService(store, sealer, () => devboxes);
  const host = { maxCpuCores: config.maxCpuCores, maxMemoryGiB: config.maxMemoryGiB };
  const blueprints = buildBlueprints({
    store,
    runtime,
    jobs: () => jobs,
    node,
    host,
    objects: () => objects,
    builds: config.blueprintBuilds,
    accountBuilds: config.blueprintAccountBuilds,
    timeoutMs: config.blueprintBuildTimeoutSeconds * 1000,
    reveal: async (accountId, name) => (await secrets.reveal(accountId, name)).value,
    secretExists: async (accountId, ref) => (await secrets.resolve(accountId, ref)) !== undefined,
    sealer,
    code: repositories.buildClones,
    network: {
      egressOf: async (accountId, id) => (await networkPolicies.policies.get(accountId, id))?.egress,
      attach: (id, e) => egress.attachSandbox(id, e),
      detach: (id) => egress.onStopped(id, true),
    },
    log: logger.child({ component: 'blueprints' }),
  });
  const devboxes = new DevboxService(store, lifecycle, events, logger.child({ component: 'devboxes' }), host, node, {
    // The blueprint's resolver first: the others see the request with the blueprint's launch defaults.
    resolvers: [
      async () => (evictions.service.refuseWhileDraining('create'), undefined),
      blueprints.resolver,
      secretsForBoxes.resolver,
      egress.resolver,
      mcp.devbox.resolver,
      snapshotLayersResolver(() => snapshots),
      gateway.devbox.resolver,
      tunnels.resolver,
      objectMounts.resolver,
      agentMounts.resolver,
      axons.mounts.resolver,
      repositories.codeMounts.resolver,
    ],
    environment: [secretsForBoxes.environment, mcp.devbox.environment, gateway.devbox.environment],
    enrichers: [mcp.devbox.enricher, gateway.devbox.enricher, tunnels.enricher],
    shutdownGuards: [snapshotShutdownGuard(() => snapshots)],
  });

  const devboxLog = new DevboxLog(store.logs, logger.child({ component: 'devbox-log' }));
  // Execution output's sealed segments live in the blob store.
  const outputs = new OutputBudget(
    new OutputStorage(path.join(config.dataDir, 'executions'), blobs),
    {
      streamMaxBytes: config.executionOutputMaxBytes,
      boxMaxBytes: config.executionOutputBoxMaxBytes,
      retentionMs: config.executionOutputRetentionSeconds * 1000,
    },
    logger.child({ component: 'execution-output' }),
  );
  const boxState = async (id: string) => {
    const d = await devboxStore.getById(id);
    return d && { ended: TERMINAL.has(d.status), endTimeMs: d.endTimeMs };
  };
  const boxJobs = new BoxJobs(outputs);
  const executions = new ExecutionService(
    store.executions,
    devboxLog,
    devboxes,
    boxJobs,
    boxState,
    logger.child({ component: 'executions' }),
    node,
    config.maxExecutionsPerDevbox,
  );
  await executions.reconcile();
  const files = new FileService(devboxes, logger.child({ component: 'files' }), { stallMs: config.uploadStallMs });
  const scenarios = buildScenarios({
    store,
    config: config.scenarios,
    devboxes: () => devboxes,
    devboxById: (id) => devboxStore.getById(id),
    sandboxOf: (id) => lifecycle.active.get(id)?.sandbox,
    boxJobs,
    resume: (accountId, id) => suspend.resume(accountId, id),
    liveDevboxIds: async () => (await devboxStore.listByStatus(DEVBOX_STATUSES.filter((s) => !TERMINAL.has(s)))).map((d) => d.id),
    jobs: () => jobs,
    openJobs: () => store.jobs.listOpen(node),
    secretExists: async (accountId, ref) => (await secrets.resolve(accountId, ref)) !== undefined,
    runListeners: [(r) => benchmarks.runChanged(r)],
    benchmarkScenarioIds: (accountId, id) => benchmarks.scenarioIdsOf(accountId, id),
    log: logger.child({ component: 'scenarios' }),
  });
  const benchmarks = buildBenchmarks({
    store,
    scenarios: () => scenarios.scenarios,
    scenarioRuns: () => scenarios.runs,
    jobs: () => jobs,
    node,
    config: config.benchmarks,
    log: logger.child({ component: 'benchmarks' }),
  });
  const benchmarkJobs = wireBenchmarkJobs({ store, config, jobs: () => jobs, logger }, () => ({ benchmarks, scenarios, agents, devboxes, executions, files }));
  // Durable jobs: their handlers reach the services below through closures, called once a job runs.
  const jobs = new JobRunner(
    store.jobs,
    node,
    {
      [CAPTURE_JOB]: { run: (job) => snapshots.settleCapture(job.subjectId), exhausted: (job, err) => snapshots.captureFailed(job.subjectId, err) },
      [SUSPEND_JOB]: { run: (job) => suspend.settleSuspend(job.subjectId), exhausted: (job, err) => suspend.suspendFailed(job.subjectId, err) },
      [RESUME_JOB]: { run: (job) => suspend.settleResume(job.subjectId), exhausted: (job, err) => suspend.resumeFailed(job.subjectId, err) },
      [BUILD_JOB]: { run: (job) => blueprints.runner.run(job.subjectId), exhausted: (job, err) => blueprints.runner.exhausted(job.subjectId, err) },
      [EXPIRE_JOB]: (job) => objects.expire(job.subjectId),
      ...scenarios.jobs,
      [INSPECT_JOB]: { run: (job) => repositories.runner.run(job.subjectId), exhausted: (job, err) => repositories.runner.exhausted(job.subjectId, err) },
      ...benchmarks.jobs,
      ...benchmarkJobs.jobs,
    },
    logger.child({ component: 'jobs' }),
    { background: [EXPIRE_JOB, SCORE_JOB, RUN_JOB, BENCHMARK_JOB], untilDone: [EXPIRE_JOB] },
  );
  // Presigned URLs are signed under a key derived from the master key this server held first (see presign.ts).
  const objects = new ObjectService(store, blobs, new Presigner(keys.first.key), () => jobs, config.objects, logger.child({ component: 'objects' }));
  const agents = new AgentService(store, objects, config.agents);
  const snapshots = new SnapshotService(store.snapshots, devboxStore, devboxes, runtime, logger.child({ component: 'snapshots' }), jobs, {
    layersDir: path.join(config.dataDir, 'layers'),
    node,
    layersInUse: () => blueprints.store.layersInUse(),
    blueprintLayers: async (id) => (await blueprints.store.getById(id))?.layers ?? [],
  });
  const suspend = new SuspendService(
    devboxes,
    store,
    lifecycle,
    snapshots,
    logger.child({ component: 'suspend' }),
    jobs,
    (id) => files.stopWrites(id),
    () => evictions.service.refuseWhileDraining('resume'),
  );
  const tunnelFront = new TunnelFront({
    tunnels,
    devboxes,
    lifecycle,
    devboxById: (id) => devboxStore.getById(id),
    resume: (accountId, id) => suspend.resume(accountId, id),
    address: async (id) => (await runtime.network(id))?.boxAddress ?? null,
    domain: config.tunnelDomain,
    wakeTimeoutMs: WAKE_TIMEOUT_MS,
    log: logger.child({ component: 'tunnels' }),
  });
  // Boxes whose policy allows devbox-to-devbox traffic reach their account's tunnels through the box services.
  boxServices.route(TUNNEL_PREFIX, tunnelFront.fromBox);
  const ptyTunnels = new PtyTunnels(store, () => devboxes);
  const ptySessions = new PtySessions(lifecycle, () => devboxes, config.ptyIdleTtlSeconds * 1000, logger.child({ component: 'pty' }));
  const ptyFront = new PtyFront({
    tunnels: ptyTunnels,
    sessions: ptySessions,
    devboxById: (id) => devboxStore.getById(id),
    domain: config.tunnelDomain,
    pingMs: config.ptyPingSeconds * 1000,
    log: logger.child({ component: 'pty' }),
  });
  const evictions = buildEvictions({
    store,
    lifecycle,
    events,
    suspend: (d) => suspend.suspendIdle(d),
    snapshotting: async (id) => Boolean(await snapshots.inProgressFor(id)),
    node,
    config: config.eviction,
    log: logger.child({ component: 'evictions' }),
  });
  const supervisor = new Supervisor(devboxStore, runtime, lifecycle, logger.child({ component: 'supervisor' }), node, (d) => suspend.suspendIdle(d));
  // Snapshots caught in progress and devboxes caught suspending are settled by their jobs, before the layer
  // collection and the supervisor's reconcile look at them.
  await jobs.resume();
  await objects.reconcile();
  await snapshots.reconcile();
  await suspend.reconcile(node);
  snapshots.startCollector();

  await supervisor.reconcile();
  await gateway.bindings.reconcile();
  // Adopted boxes get their egress rules and DNS again (the rules survive in the kernel; the policy may have
  // changed meanwhile), before their box services link: what the policy allows of those is known by then.
  await egress.reattach([...lifecycle.active.keys()]);
  // They lost their link with the previous server: each gets a fresh one.
  await Promise.all(
    [...lifecycle.active.keys()].map((id) => boxServices.link(id).catch((err) => logger.error({ err, devbox: id }, 'box services link failed'))),
  );
  // Adopted boxes' broker mounts: their agents lost the previous server's pipes; each is started again.
  for (const [id, box] of lifecycle.active) {
    const d = await devboxStore.getById(id);
    if (d) await axons.broker.start(d, box.sandbox).catch((err) => logger.error({ err, devbox: id }, 'broker start failed'));
  }
  await executions.reconcileOutput();
  await mcp.reconcile();
  supervisor.start();
  // Builds a restart cut run again from here (their jobs retry): the supervisor removed their old sandboxes.
  blueprints.runner.markStarted();
  repositories.runner.markStarted();
  await evictions.start();
  // Runs whose box ended while the server was down end now; resumed scoring jobs were waiting for the adoption.
  await scenarios.reconcile();
  // After the scenario runs settled: seed the built-in benchmark, a pass over every open benchmark run, then over every open job.
  await benchmarks.start(await accounts.builtinAccountId());
  await benchmarkJobs.start();
  return {
    store,
    node,
    runtime,
    accounts,
    idempotency,
    events,
    lifecycle,
    devboxes,
    executions,
    files,
    snapshots,
    suspend,
    sealer,
    secrets,
    networkPolicies,
    objects,
    agents,
    mcp,
    fileContentsGate: Gate.fair(config.fileContentsConcurrency, config.fileContentsQueue),
    fileTransferGate: Gate.fair(config.fileTransferConcurrency, config.fileTransferQueue),
    gateway,
    boxServices,
    tunnels: { service: tunnels, front: tunnelFront },
    blueprints,
    pty: { tunnels: ptyTunnels, sessions: ptySessions, front: ptyFront },
    ssh: {
      keys: sshKeys,
      front: sshFront,
    },
    evictions,
    axons,
    scenarios,
    repositories,
    benchmarks,
    benchmarkJobs,
    async close() {
      await sshFront.close();
      evictions.close();
      axons.close();
      tunnelFront.close();
      await boxServices.close();
      await gateway.proxy.close();
      await repositories.relay.close();
      egress.close();
      supervisor.stop();
      await mcp.close();
      outputs.stop();
      snapshots.stop();
      benchmarks.runs.stop();
      benchmarkJobs.stop();
      jobs.stop();
      await devboxLog.flush();
      await store.close();
      await runtime.close?.();
    },
  };
}
