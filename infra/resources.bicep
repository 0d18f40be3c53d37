// Everything the app runs on, in one resource group: a Flex Consumption function app that reaches
// every dependency with one user-assigned managed identity (no keys, no connection secrets).
// Names follow the abbreviations of Azure's naming guidance, with a token unique to the environment.

param location string
param tags object
param resourceToken string
param instanceMemoryMB int
param maximumInstanceCount int
param deployOpenAI bool
param openAIModelName string
param openAIModelVersion string
param openAICapacity int
param deployRedis bool
param useDurableTaskScheduler bool
@secure()
@description('The app settings of the user\'s own, a JSON object of names to values (main.bicep).')
param appSettings string

// The app's task hub (host.json names none: the app setting below sets it) and its archive's
// container. The storage account and the scheduler are this app's own, so nothing is shared;
// the names are the ones earlier deployments used, so an update keeps their sessions and history.
var taskHubName = 'durableagents'
var historyContainerName = 'agent-history'
var functionAppName = 'func-${resourceToken}'
// Flex Consumption deploys from a blob container: one per app.
var deploymentContainerName = 'app-package-${resourceToken}'

// Built-in role definitions (their ids are the same in every tenant).
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-${resourceToken}'
  location: location
  tags: tags
}

// ---- Storage: the host's own state, Durable Functions (queues, tables, large states in blobs),
// archived history (the agent-history container, made by the app) and the deployment package.
resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: 'st${resourceToken}'
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  //checkov:skip=CKV_AZURE_206:Locally redundant is enough: the account holds runtime state and a deployment package that a redeploy rewrites; choose ZRS/GRS here if sessions must survive a zone or region loss.
  //checkov:skip=CKV_AZURE_59:Flex Consumption without a virtual network reaches storage over its public endpoint; access still needs an Entra ID token (shared keys are off).
  //checkov:skip=CKV_AZURE_35:The default action stays Allow because Flex Consumption instances outside a virtual network come from no fixed addresses; shared keys are off, so every request needs an Entra ID token.
  //checkov:skip=CKV_AZURE_43:The name is 'st' plus uniqueString() (13 lowercase letters and digits), valid, but checkov cannot evaluate the interpolation.
  properties: {
    allowSharedKeyAccess: false // identity-based connections only
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }

  resource blobs 'blobServices' = {
    name: 'default'

    resource deployment 'containers' = {
      name: deploymentContainerName
    }
  }
}

// Durable Functions on Azure Storage uses all three services; the host and the archive need blobs
// (Owner: the app creates its containers).
var storageRoles = [roles.storageBlobDataOwner, roles.storageQueueDataContributor, roles.storageTableDataContributor]
resource storageRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for role in storageRoles: {
  name: guid(storage.id, identity.id, role)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}]

// ---- Monitoring
resource logAnalytics 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-${resourceToken}'
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-${resourceToken}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logAnalytics.id
    // Entra ID only: the host and the app's own exporter (hosting/_telemetry.py) both send with the
    // identity APPLICATIONINSIGHTS_AUTHENTICATION_STRING names (Monitoring Metrics Publisher, below).
    DisableLocalAuth: true
  }
}

resource appInsightsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, identity.id, roles.monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// ---- Optional dependencies, one module each (app/), every one reached with the identity.
module openAI 'app/openai.bicep' = if (deployOpenAI) {
  name: 'openai'
  params: {
    location: location
    tags: tags
    name: 'oai-${resourceToken}'
    principalId: identity.properties.principalId
    modelName: openAIModelName
    modelVersion: openAIModelVersion
    capacity: openAICapacity
  }
}

module redis 'app/redis.bicep' = if (deployRedis) {
  name: 'redis'
  params: {
    location: location
    tags: tags
    name: 'redis-${resourceToken}'
    principalId: identity.properties.principalId
  }
}

module scheduler 'app/scheduler.bicep' = if (useDurableTaskScheduler) {
  name: 'scheduler'
  params: {
    location: location
    tags: tags
    name: 'dts-${resourceToken}'
    taskHubName: taskHubName
    principalId: identity.properties.principalId
  }
}

// ---- The function app
resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${resourceToken}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  //checkov:skip=CKV_AZURE_225:Zone redundancy on Flex Consumption needs a region that offers it and zone-redundant storage; turn both on together where sessions must survive a zone loss.
  properties: {
    reserved: true // Linux
  }
}

// App settings: docs/deploy.md gives the reason for each.
var baseSettings = [
  { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
  { name: 'AzureWebJobsStorage__clientId', value: identity.properties.clientId }
  { name: 'AzureWebJobsStorage__blobServiceUri', value: storage.properties.primaryEndpoints.blob }
  { name: 'AzureWebJobsStorage__queueServiceUri', value: storage.properties.primaryEndpoints.queue }
  { name: 'AzureWebJobsStorage__tableServiceUri', value: storage.properties.primaryEndpoints.table }
  { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: appInsights.properties.ConnectionString }
  { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${identity.properties.clientId};Authorization=AAD' }
  { name: 'AZURE_CLIENT_ID', value: identity.properties.clientId }
  { name: 'PYTHON_ENABLE_INIT_INDEXING', value: '1' }
  { name: 'PYTHON_THREADPOOL_THREAD_COUNT', value: '300' }
  { name: 'FUNCTIONS_REQUEST_BODY_SIZE_LIMIT', value: '262144' }
  { name: 'AzureFunctionsJobHost__extensions__durableTask__hubName', value: taskHubName }
  { name: 'DURABLE_AGENTS_HISTORY_CONTAINER', value: historyContainerName }
]
var openAISettings = deployOpenAI ? [
  { name: 'AZURE_OPENAI_ENDPOINT', value: openAI.outputs.endpoint }
  { name: 'AZURE_OPENAI_CHAT_DEPLOYMENT_NAME', value: openAI.outputs.chatDeploymentName }
] : []
var redisSettings = deployRedis ? [
  { name: 'DURABLE_AGENTS_STREAM_REDIS', value: 'rediss://${redis.outputs.hostName}:${redis.outputs.port}/0' }
  { name: 'DURABLE_AGENTS_STREAM_REDIS_ENTRA', value: 'true' }
] : []
// The two AzureFunctionsJobHost__ settings override host.json's storageProvider, as editing it would.
var schedulerSettings = useDurableTaskScheduler ? [
  { name: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING', value: 'Endpoint=${scheduler.outputs.endpoint};Authentication=ManagedIdentity;ClientID=${identity.properties.clientId}' }
  { name: 'AzureFunctionsJobHost__extensions__durableTask__storageProvider__type', value: 'azureManaged' }
  { name: 'AzureFunctionsJobHost__extensions__durableTask__storageProvider__connectionStringName', value: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING' }
] : []

// The user's own settings (azd's APP_SETTINGS): written with the template's on every provision,
// so they last, where a setting made by hand in the portal would be replaced.
var userSettings = [for setting in items(json(appSettings)): { name: setting.key, value: string(setting.value) }]

resource functionApp 'Microsoft.Web/sites@2024-04-01' = {
  name: functionAppName
  location: location
  tags: union(tags, { 'azd-service-name': 'api' }) // azure.yaml's service
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identity.id}': {} }
  }
  //checkov:skip=CKV_AZURE_222:The API is public by design: function keys guard agent routes and the mcp_extension system key guards MCP; add a virtual network and private endpoint to close it.
  //checkov:skip=CKV_AZURE_17:Callers authenticate with function keys; client certificates would have to be issued to every caller (browsers' EventSource, MCP clients, curl).
  //checkov:skip=CKV_AZURE_212:Flex Consumption scales from zero by design; numberOfWorkers does not apply to it (set always-ready instances to avoid cold starts).
  //checkov:skip=CKV_AZURE_213:Flex Consumption instances are started and stopped by the Functions scale controller; /api/health serves availability tests instead (docs/deploy.md).
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
      appSettings: concat(baseSettings, openAISettings, redisSettings, schedulerSettings, userSettings)
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identity.id
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
      }
      runtime: {
        name: 'python'
        version: '3.13'
      }
    }
  }

  // The app starts with its roles in place: a host without them fails its first storage calls.
  dependsOn: [storageRoleAssignments, appInsightsPublisher]
}

output functionAppName string = functionApp.name
output functionAppUrl string = 'https://${functionApp.properties.defaultHostName}'
