// First-person frames for mau's minecraft backend: one headless prismarine-viewer scene of the server's world
// (blocks meshed by the viewer's workers), one coloured player figure per active player, and a camera placed at
// each asked player's eye in turn. The asked player's own figure is hidden from its own camera.
// Needs node-canvas-webgl (canvas >= 3.1, gl built from source) and an X display (run under xvfb-run).
'use strict'
global.THREE = require('three')
global.Worker = require('worker_threads').Worker
const fs = require('fs')
const THREE = global.THREE
const { createCanvas } = require('node-canvas-webgl/lib')
const { Viewer, WorldView } = require('prismarine-viewer/viewer')
const { WorldRenderer } = require('prismarine-viewer/viewer/lib/worldrenderer')
const { Vec3 } = require('vec3')

// Minecraft's player model in blocks (1 px = 1/16 block, scaled 0.9375 like the game's): legs, body, arms, head.
const PX = 0.9375 / 16
const PARTS = [
  // [w, h, d, x, y, z, shade] (centre positions in px); the body and arms show the exact player colour, the legs
  // and the head are darker so that a figure reads as one
  [4, 12, 4, -2, 6, 0, 0.85], [4, 12, 4, 2, 6, 0, 0.85],
  [8, 12, 4, 0, 18, 0, 1.0],
  [4, 12, 4, -6, 18, 0, 1.0], [4, 12, 4, 6, 18, 0, 1.0],
  [8, 8, 8, 0, 28, 0, 0.75]
]

function figure (rgb) {
  const group = new THREE.Group()
  for (const [w, h, d, x, y, z, shade] of PARTS) {
    const geo = new THREE.BoxGeometry(w * PX, h * PX, d * PX)
    const c = new THREE.Color(rgb[0] * shade / 255, rgb[1] * shade / 255, rgb[2] * shade / 255)
    const mesh = new THREE.Mesh(geo, new THREE.MeshBasicMaterial({ color: c }))
    mesh.position.set(x * PX, y * PX, z * PX)
    group.add(mesh)
  }
  return group
}

class FrameViewer {
  constructor (cfg, serv) {
    this.cfg = cfg
    this.serv = serv
    this.width = cfg.frames.width
    this.height = cfg.frames.height
  }

  async init () {
    const cfg = this.cfg
    this.canvas = createCanvas(this.width, this.height)
    this.renderer = new THREE.WebGLRenderer({ canvas: this.canvas })
    this.viewer = new Viewer(this.renderer)
    // The viewer meshes in 4 worker threads and sends every column to each; one worker does the same work with a
    // quarter of the copying (the map is meshed once per host: 2.4 s with one worker, 8.4 s with four, measured
    // on 2 busy cores).
    for (const w of this.viewer.world.workers) w.terminate()
    this.viewer.world = new WorldRenderer(this.viewer.scene, 1)
    if (!this.viewer.setVersion(cfg.version)) throw new Error(`the viewer cannot draw ${cfg.version}`)
    this.viewer.camera.fov = cfg.frames.fov_vertical_deg
    this.viewer.camera.near = 0.05
    this.viewer.camera.updateProjectionMatrix()
    const [cx, cz] = cfg.frames.center
    const center = new Vec3(cx, cfg.floor_y, cz)
    // The server's world holds the whole map; the view distance (chunks) covers it from its centre. Only the
    // columns that hold map blocks are meshed: the empty world around them would cost seconds and draws nothing.
    this.worldView = new WorldView(this.serv.overworld, cfg.frames.view_chunks, center)
    this.viewer.listen(this.worldView)
    this.worldView.lastPos.update(center)
    const columns = new Map()
    for (const [x0, x1, , , z0, z1] of cfg.blocks) {
      for (let cx = Math.floor(x0 / 16); cx <= Math.floor(x1 / 16); cx++) {
        for (let cz = Math.floor(z0 / 16); cz <= Math.floor(z1 / 16); cz++) columns.set(`${cx},${cz}`, new Vec3(cx * 16, 0, cz * 16))
      }
    }
    for (const pos of columns.values()) await this.worldView.loadChunk(pos)
    await this.viewer.waitForChunksToRender()
    this.figures = {}
    for (const p of cfg.players) {
      const g = figure(p.rgb)
      g.visible = false
      this.viewer.scene.add(g)
      this.figures[p.name] = g
    }
    this.gl = this.renderer.getContext()
    this.pixels = Buffer.alloc(this.width * this.height * 4)
    // Frames go to a file (tmpfs where there is one) that the driver reads: a synchronous write of the
    // pixels, instead of megabytes through the event loop that also carries the bots' protocol traffic.
    this.fd = fs.openSync(cfg.frames_file, 'w+')
    process.on('exit', () => { try { fs.unlinkSync(cfg.frames_file) } catch (e) {} })
  }

  // Blocks changed on the server (bodies placed or cleared): re-mesh their sections before the next frame.
  async blocksChanged (changes) {
    for (const [x, y, z, stateId] of changes) this.viewer.setBlockStateId(new Vec3(x, y, z), stateId)
    await this.viewer.waitForChunksToRender()
  }

  // figures: name -> [x, y, z, mcYaw] of every player drawn; views: [name, x, y, z, mcYaw] to render from.
  // Frame i goes to bytes [i * w * h * 4, (i + 1) * w * h * 4) of the frames file (RGBA, rows bottom-up).
  render ({ figures, views }) {
    const t = process.hrtime.bigint()
    for (const [name, g] of Object.entries(this.figures)) {
      const f = figures[name]
      g.visible = !!f
      if (f) {
        g.position.set(f[0], f[1], f[2])
        g.rotation.set(0, f[3], 0)
      }
    }
    const cam = this.viewer.camera
    const n = this.width * this.height * 4
    views.forEach(([name, x, y, z, yaw], i) => {
      const own = this.figures[name]
      const wasVisible = own ? own.visible : false
      if (own) own.visible = false // each bot's own body, head included, is hidden from its own camera
      cam.position.set(x, y + this.cfg.eye_height, z)
      cam.rotation.set(0, yaw, 0, 'ZYX')
      this.renderer.render(this.viewer.scene, cam)
      this.gl.readPixels(0, 0, this.width, this.height, this.gl.RGBA, this.gl.UNSIGNED_BYTE, this.pixels)
      fs.writeSync(this.fd, this.pixels, 0, n, i * n)
      if (own) own.visible = wasVisible
    })
    const ms = Number(process.hrtime.bigint() - t) / 1e6
    return { nbytes: n * views.length, width: this.width, height: this.height, count: views.length, ms }
  }
}

module.exports = { FrameViewer }
