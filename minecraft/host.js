// The Node side of mau's `minecraft` world backend: one process hosts a flying-squid server, one mineflayer bot
// per player and (optionally) a headless prismarine-viewer scene for first-person frames.
//
// Why one process: lockstep. Python's rules engine is the authority; this process only moves bodies. A step
// is "set each bot's walking goal, run N physics ticks by hand (prismarine-physics), emit N server ticks by hand,
// report positions", so a step costs what it computes, never wall-clock game time.
//
// Protocol (loopback TCP, the port is written to the ready file): one JSON request per line; one JSON reply per
// line. Frames are written as raw RGBA bytes into `cfg.frames_file` (in /dev/shm where there is one); the `frames`
// reply says how many bytes (frames never travel through the socket or as base64 inside JSON).
// One host serves many matches (Python pools it): `reset` restores the map's blocks and the bots' physics state
// to what they were when the host became ready, so a match on a reused host plays as on a fresh one.
// Usage: node host.js <config.json>   (written by mau/env/minecraft/host.py)
'use strict'
const fs = require('fs')
const net = require('net')

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const t0 = Date.now()
function log (...args) { console.log(`[host +${((Date.now() - t0) / 1000).toFixed(2)}s]`, ...args) }

process.on('unhandledRejection', (e) => { log('unhandled rejection', e && e.stack ? e.stack : e); process.exit(3) })
process.on('uncaughtException', (e) => { log('uncaught exception', e && e.stack ? e.stack : e); process.exit(3) })

const mcServer = require('flying-squid')
const mineflayer = require('mineflayer')
const { Physics, PlayerState } = require('prismarine-physics')
const { Vec3 } = require('vec3')

const FLOOR_Y = cfg.floor_y // players stand at this y; floor blocks are one below
const WALK_PER_TICK = cfg.walk_speed / 20

function withTimeout (promise, ms, what) {
  let timer
  return Promise.race([promise, new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms)
  })]).finally(() => clearTimeout(timer))
}

async function startServer () {
  const serv = mcServer.createMCServer({
    port: cfg.mc_port,
    host: '127.0.0.1',
    'online-mode': false,
    logging: false,
    motd: 'mau',
    'max-players': cfg.players.length + 2,
    gameMode: 2, // adventure: nobody breaks the map
    difficulty: 0,
    worldFolder: undefined,
    generation: { name: 'empty', options: {} },
    kickTimeout: 600000,
    plugins: {},
    modpe: false,
    'view-distance': cfg.view_distance,
    'player-list-text': { header: { text: 'mau' }, footer: { text: '' } },
    'everybody-op': true,
    'max-entities': 100,
    version: cfg.version
  })
  await withTimeout(new Promise((resolve) => serv.once('listening', resolve)), 20000, 'server listening')
  // flying-squid ticks on a 50 ms timer; in lockstep the driver emits the ticks (see stepTicks).
  serv.stopTickInterval()
  const [sx, sz] = cfg.spawn
  serv.getSpawnPoint = async () => new Vec3(sx + 0.5, FLOOR_Y, sz + 0.5)
  return serv
}

async function buildMap (serv) {
  const reg = serv.registry
  let n = 0
  for (const [x0, x1, y0, y1, z0, z1, name] of cfg.blocks) {
    const block = reg.blocksByName[name]
    if (!block) throw new Error(`block ${name} is unknown to ${cfg.version}`)
    for (let x = x0; x <= x1; x++) {
      for (let y = y0; y <= y1; y++) {
        for (let z = z0; z <= z1; z++) {
          await serv.overworld.setBlockStateId(new Vec3(x, y, z), block.defaultState)
          n++
        }
      }
    }
  }
  return n
}

function stepServerTicks (serv, n) {
  for (let i = 0; i < n; i++) serv.emit('tick', 0.05, ++serv.tickCount)
}

async function joinBot (serv, name) {
  const bot = mineflayer.createBot({
    host: '127.0.0.1',
    port: serv.listeningPort,
    username: name,
    version: cfg.version,
    auth: 'offline',
    physicsEnabled: false,
    viewDistance: 'tiny',
    hideErrors: false
  })
  // The server places a joining player twice (at login, and again once the rest of the chunks went out);
  // the driver may move a bot only after the second, or the late one pulls it back to the spawn.
  bot.forcedMoves = 0
  bot.on('forcedMove', () => {
    bot.forcedMoves++
    if (bot.ready) log(`bot ${name}: the server moved it (correction ${bot.forcedMoves - 2})`)
  })
  bot.on('kicked', (reason) => log(`bot ${name} kicked:`, JSON.stringify(reason)))
  bot.on('error', (e) => log(`bot ${name} error:`, e && e.message))
  await withTimeout(new Promise((resolve) => bot.once('spawn', resolve)), 30000, `bot ${name} spawn`)
  bot.physicsEnabled = false
  // flying-squid finishes a login (last chunks, the second placement) on the client's first look/flying packet.
  bot._client.write('look', { yaw: 0, pitch: 0, onGround: true, flags: { onGround: true, hasHorizontalCollision: false } })
  return bot
}

function teleportBot (bot, x, z, yaw) {
  bot.entity.position = new Vec3(x, FLOOR_Y, z)
  bot.entity.velocity = new Vec3(0, 0, 0)
  bot.entity.onGround = true
  if (yaw !== undefined && yaw !== null) bot.entity.yaw = yaw
  bot.clearControlStates()
}

// Python's yaw: 0 looks along +x, pi/2 along +z. Mineflayer's: 0 looks along -z, pi/2 along -x.
function mcYawTo (dx, dz) { return Math.atan2(-dx, -dz) }
function fromMcYaw (yaw) { return Math.atan2(-Math.cos(yaw), -Math.sin(yaw)) }

// The server world's blocks as the physics reads them, each looked up once (a lookup builds a Block object; the
// physics asks for the same few blocks around every bot every tick). Cleared whenever the driver sets blocks.
class BlockCache {
  constructor (world) {
    this.world = world
    this.blocks = new Map()
  }

  getBlock (pos) {
    const x = Math.floor(pos.x)
    const y = Math.floor(pos.y)
    const z = Math.floor(pos.z)
    const key = `${x},${y},${z}`
    let b = this.blocks.get(key)
    if (b === undefined) {
      b = this.world.getBlock(new Vec3(x, y, z))
      this.blocks.set(key, b)
    }
    return b
  }

  clear () { this.blocks.clear() }
}

class Host {
  constructor (serv, bots, physics, world) {
    this.serv = serv
    this.world = world // what the physics reads the blocks from
    this.bots = bots // name -> bot
    this.physics = physics
    this.goals = {} // name -> [x, z] or absent
    this.viewer = null
    this.changed = new Map() // 'x,y,z' -> [x, y, z, the map's state id] of every block set since the last reset
    this.matches = 0
    this.initial = {} // name -> the bot's physics state when the host became ready (restored by reset)
    for (const [name, bot] of Object.entries(bots)) this.initial[name] = physicsState(bot)
  }

  // A new match on this host: the map's blocks back (bodies' carpets gone), every bot's physics state as at
  // ready; the driver then teleports the players to their start (as on a fresh host).
  async reset () {
    const restore = [...this.changed.values()]
    this.changed.clear()
    await this.placeBlocks(restore)
    for (const [name, bot] of Object.entries(this.bots)) {
      bot.clearControlStates()
      setPhysicsState(bot, this.initial[name])
    }
    this.matches++
    log(`match reset (match ${this.matches + 1} on this host; ${restore.length} blocks restored)`)
    return { positions: this.positions() }
  }

  positions () {
    const out = {}
    for (const [name, bot] of Object.entries(this.bots)) {
      const p = bot.entity.position
      out[name] = [p.x, p.y, p.z, fromMcYaw(bot.entity.yaw)]
    }
    return out
  }

  // Walk the bots named in `goals` for n ticks, each along its waypoints ([[x, z], ...]; null = stand): the bot
  // faces the next waypoint, presses forward and the physics engine moves it (walls collide); within one tick's
  // walk of a waypoint it steps onto it. Bots not named (the dead) are not simulated. `yaws` turns standing bots.
  step ({ goals, ticks, yaws }) {
    const routes = {}
    const consumed = {}
    for (const [name, g] of Object.entries(goals)) {
      routes[name] = g ? g.slice() : null
      consumed[name] = 0
    }
    let msPhysics = 0
    let msServer = 0
    for (let t = 0; t < ticks; t++) {
      const t0 = performance.now()
      for (const [name, route] of Object.entries(routes)) {
        const bot = this.bots[name]
        let budget = WALK_PER_TICK
        while (route && route.length) {
          const p = bot.entity.position
          const [gx, gz] = route[0]
          const d = Math.hypot(gx - p.x, gz - p.z)
          if (d > budget) break
          bot.entity.position = new Vec3(gx, p.y, gz)
          bot.entity.velocity = new Vec3(0, bot.entity.velocity.y, 0)
          budget -= d
          route.shift()
          consumed[name]++
        }
        if (route && route.length) {
          const p = bot.entity.position
          bot.entity.yaw = mcYawTo(route[0][0] - p.x, route[0][1] - p.z)
          bot.setControlState('forward', true)
        } else {
          bot.clearControlStates()
          if (yaws && yaws[name] !== undefined && yaws[name] !== null) bot.entity.yaw = toMcYawFromPy(yaws[name])
        }
        if (route && route.length === 0 && budget < WALK_PER_TICK) continue // stepped onto the last waypoint
        const v = bot.entity.velocity
        if (!(route && route.length) && bot.entity.onGround && Math.abs(v.x) + Math.abs(v.z) < 1e-4) continue // at rest
        this.physics.simulatePlayer(new PlayerState(bot, bot.controlState), this.world).apply(bot)
      }
      const t1 = performance.now()
      stepServerTicks(this.serv, 1)
      msPhysics += t1 - t0
      msServer += performance.now() - t1
    }
    for (const bot of Object.values(this.bots)) bot.clearControlStates()
    return { positions: this.positions(), consumed, ms_physics: msPhysics, ms_server: msServer }
  }

  teleport ({ players }) {
    for (const [name, [x, z, yaw]] of Object.entries(players)) {
      teleportBot(this.bots[name], x, z, yaw === undefined ? undefined : toMcYawFromPy(yaw))
    }
    return { positions: this.positions() }
  }

  async setBlocks ({ blocks }) {
    const reg = this.serv.registry
    const changes = []
    for (const [x, y, z, name] of blocks) {
      const block = reg.blocksByName[name]
      if (!block) throw new Error(`block ${name} is unknown`)
      const key = `${x},${y},${z}`
      if (!this.changed.has(key)) this.changed.set(key, [x, y, z, this.serv.overworld.sync.getBlockStateId(new Vec3(x, y, z))])
      changes.push([x, y, z, block.defaultState])
    }
    await this.placeBlocks(changes)
    return {}
  }

  async placeBlocks (changes) {
    for (const [x, y, z, state] of changes) await this.serv.setBlock(this.serv.overworld, new Vec3(x, y, z), state)
    this.world.clear()
    if (this.viewer && changes.length) await this.viewer.blocksChanged(changes)
  }

  // The server's blocks at `at` ([[x, y, z], ...]) by name (for tests: bodies placed, and gone after reset).
  blocks ({ at }) {
    return { blocks: at.map(([x, y, z]) => this.serv.overworld.sync.getBlock(new Vec3(x, y, z)).name) }
  }

  // Which bots each bot has in its entity list (what the Minecraft protocol told it), for the join check.
  seen () {
    const out = {}
    for (const [name, bot] of Object.entries(this.bots)) {
      out[name] = Object.values(bot.entities).filter((e) => e.type === 'player' && e.username && e !== bot.entity)
        .map((e) => e.username).sort()
    }
    return { seen: out }
  }

  // Frames from the eyes of `views`; every player in `active` is drawn at its bot's position.
  async frames ({ views, active }) {
    if (!this.viewer) {
      const { FrameViewer } = require('./frames')
      const t = performance.now()
      this.viewer = new FrameViewer(cfg, this.serv)
      await this.viewer.init()
      log(`frame viewer ready in ${((performance.now() - t) / 1000).toFixed(2)} s`)
    }
    const figures = {}
    for (const name of active) {
      const e = this.bots[name].entity
      figures[name] = [e.position.x, e.position.y, e.position.z, e.yaw]
    }
    // views: [[name, yaw]]; yaw in Python's convention, null = the bot's own.
    const eyes = views.map(([name, yaw]) => {
      const e = this.bots[name].entity
      return [name, e.position.x, e.position.y, e.position.z, yaw === null || yaw === undefined ? e.yaw : toMcYawFromPy(yaw)]
    })
    return this.viewer.render({ figures, views: eyes })
  }
}

// What prismarine-physics reads from a bot besides its position and yaw (PlayerState), for reset.
const ENTITY_FIELDS = ['onGround', 'isInWater', 'isInLava', 'isInWeb', 'isCollidedHorizontally', 'isCollidedVertically',
  'elytraFlying', 'pitch']
const BOT_FIELDS = ['jumpTicks', 'jumpQueued', 'fireworkRocketDuration']
function physicsState (bot) {
  const e = bot.entity
  const out = { velocity: e.velocity.clone(), entity: {}, bot: {} }
  for (const k of ENTITY_FIELDS) out.entity[k] = e[k]
  for (const k of BOT_FIELDS) out.bot[k] = bot[k]
  return out
}
function setPhysicsState (bot, s) {
  bot.entity.velocity = s.velocity.clone()
  for (const k of ENTITY_FIELDS) bot.entity[k] = s.entity[k]
  for (const k of BOT_FIELDS) bot[k] = s.bot[k]
}

function toMcYawFromPy (yaw) {
  // direction (cos yaw, sin yaw) in (x, z) -> mineflayer yaw
  return mcYawTo(Math.cos(yaw), Math.sin(yaw))
}

// The driver (Python) may die without a word (SIGKILL), even before it connects: then exit too. Two signs:
// stdin (a pipe from the driver) reaches its end, or the driver's pid is gone.
function watchDriver () {
  process.on('SIGTERM', () => process.exit(0)) // exit handlers run (the frames file goes)
  process.stdin.on('end', () => { log('driver stdin closed; exiting'); process.exit(0) })
  process.stdin.resume()
  if (cfg.driver_pid) {
    setInterval(() => {
      try { process.kill(cfg.driver_pid, 0) } catch (e) { log('driver gone; exiting'); process.exit(0) }
    }, 500).unref()
  }
}

async function main () {
  watchDriver()
  const serv = await startServer()
  log(`server listening on ${serv.listeningPort}`)
  const nBlocks = await buildMap(serv)
  log(`map built: ${nBlocks} blocks`)
  const bots = {}
  // Join one by one: when all join at once most bots learn about only one other (see docs/minecraft.md).
  for (const p of cfg.players) {
    bots[p.name] = await joinBot(serv, p.name)
    stepServerTicks(serv, 1)
  }
  for (const bot of Object.values(bots)) await withTimeout(bot.waitForChunksToLoad(), 30000, 'chunks')
  await withTimeout(new Promise((resolve) => {
    const check = () => Object.values(bots).every((b) => b.forcedMoves >= 2) ? resolve() : setTimeout(check, 20)
    check()
  }), 30000, 'login positions')
  for (const bot of Object.values(bots)) bot.ready = true
  // Physics runs on the server's own world (synchronous view), not on each bot's copy: a block placed by the
  // driver (a body's carpet) counts from the next tick on, never when the protocol happens to deliver it.
  const world = new BlockCache(serv.overworld.sync)
  const physics = Physics(bots[cfg.players[0].name].registry, world)
  const host = new Host(serv, bots, physics, world)
  log(`${cfg.players.length} bots joined`)

  const control = net.createServer((sock) => {
    let buf = ''
    let chain = Promise.resolve()
    sock.setNoDelay(true)
    sock.on('data', (data) => {
      buf += data.toString('utf8')
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        chain = chain.then(() => handle(host, line, sock))
      }
    })
    sock.on('error', (e) => log('control socket error', e.message))
    sock.on('close', () => { log('driver disconnected; exiting'); shutdown(serv, bots, 0) })
  })
  control.listen(0, '127.0.0.1', () => {
    const ready = { pid: process.pid, control_port: control.address().port, mc_port: serv.listeningPort }
    fs.writeFileSync(cfg.ready_file + '.tmp', JSON.stringify(ready))
    fs.renameSync(cfg.ready_file + '.tmp', cfg.ready_file)
    log('ready', JSON.stringify(ready))
  })
}

async function handle (host, line, sock) {
  let reply
  try {
    const req = JSON.parse(line)
    const op = req.op
    if (op === 'step') reply = host.step(req)
    else if (op === 'teleport') reply = host.teleport(req)
    else if (op === 'reset') reply = await host.reset()
    else if (op === 'set_blocks') reply = await host.setBlocks(req)
    else if (op === 'seen') reply = host.seen()
    else if (op === 'blocks') reply = host.blocks(req)
    else if (op === 'positions') reply = { positions: host.positions() }
    else if (op === 'frames') reply = await host.frames(req)
    else if (op === 'ping') reply = { pong: true }
    else reply = { error: `unknown op ${op}` }
  } catch (e) {
    reply = { error: String(e && e.stack ? e.stack : e) }
  }
  sock.write(JSON.stringify(reply) + '\n')
}

function shutdown (serv, bots, code) {
  try { for (const bot of Object.values(bots)) bot.end() } catch (e) {}
  try { serv.quit() } catch (e) {}
  setTimeout(() => process.exit(code), 200)
}

main().catch((e) => { log('failed:', e && e.stack ? e.stack : e); process.exit(2) })

